#!/usr/bin/env bash
# Issue 15, call 4: the early forward start again (95b9ec9's fa3_forward.cuh and
# hopper_forward.cu.in on main 26b668f: early_start.patch; in .gpu/variants/early), against main,
# hd64 at S2048 and S8192, four mods, forward, alternated, three rounds: did last session's 7%
# loss at S8192 causal hold?
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call4; mkdir -p $O
trap 'cd $O/.. && tar czf call4.tgz call4 && rm -rf call4' EXIT
nvidia-smi -L > $O/gpu.txt
pp() { [ "$1" = early ] && echo ATTNRT_PLUGIN_PATH=$PWD/variants/early || echo ATTNRT_UNUSED=1; }
MODS=causal,sliding_window_256,document_mask,block_sparse_90
for v in main early; do
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 300 bin/attnrt_flex_bench --hdim 64 --seqlen 2048 \
    --mods $MODS --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
for r in 1 2 3; do
  for v in main early; do
    env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 120 bin/attnrt_flex_bench --hdim 64 --seqlen 2048,8192 \
      --mods $MODS --backward 0 --reps 20 --csv $O/${v}_$r.csv > $O/${v}_$r.txt 2>&1
    echo "== $v round $r"; grep -h "^flex_attention,\|flash_attention_3,causal" $O/${v}_$r.csv | cut -d, -f2,5,7,10 | sed 's/prepare [0-9.]* ms; //'
  done
done
