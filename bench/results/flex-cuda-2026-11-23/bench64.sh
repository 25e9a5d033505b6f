#!/usr/bin/env bash
# The head_dim 64 half again (the first call's torch anchors for it hit dynamo's recompile limit):
# attnrt_flex_bench and torch_flex_anchors.py (recompile limit raised), hd64, S 8192, one call.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
export ATTNRT_CACHE_DIR=/tmp/attnrt-flex-cache
O=${OUT:-/tmp/o}; mkdir -p $O
timeout 100 ./bin/attnrt_flex_bench --hdim 64 --seqlen 8192 --heads 16 --batch 2 --csv $O/attnrt_flex_bench_hd64.csv > $O/attnrt_flex_bench_hd64.log 2>&1; echo "attnrt rc=$?"
cat $O/attnrt_flex_bench_hd64.csv
PYTHONUNBUFFERED=1 timeout 200 python3 torch_flex_anchors.py --hdim 64 --seqlen 8192 --heads 16 --batch 2 --csv $O/anchors_flex_hd64.csv > $O/anchors_flex_hd64.log 2>&1; echo "torch rc=$?"
cat $O/anchors_flex_hd64.csv; grep -i recompile $O/anchors_flex_hd64.log | head -2
