#!/usr/bin/env bash
# flex_attention forward speed on the H100 (issue 15): attnrt_flex_bench (attnrt's CUDA
# flex_attention on the mods, and flash_attention_2/3 on their built-in causal mask), then
# PyTorch's compiled flex_attention on the same mods and shapes (torch_flex_anchors.py), in one call.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
export ATTNRT_CACHE_DIR=/tmp/attnrt-flex-cache
O=${OUT:-/tmp/o}; mkdir -p $O
timeout 150 ./bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192,2048 --heads 16 --batch 2 --csv $O/attnrt_flex_bench.csv > $O/attnrt_flex_bench.log 2>&1; echo "attnrt rc=$?"
cat $O/attnrt_flex_bench.csv
PYTHONUNBUFFERED=1 timeout 280 python3 torch_flex_anchors.py --hdim 128,64 --seqlen 8192 --heads 16 --batch 2 --csv $O/anchors_flex.csv > $O/anchors_flex.log 2>&1; echo "torch rc=$?"
cat $O/anchors_flex.csv; tail -3 $O/anchors_flex.log
