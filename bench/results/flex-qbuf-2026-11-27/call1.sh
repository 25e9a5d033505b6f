#!/usr/bin/env bash
# Issue 15, call 1: the block-sparse forward with two Q buffers (the next tile's Q loads while
# this tile computes) and, at head_dim 64, a deeper K/V ring, against main's plugin. Variants
# (plugin folders first on ATTNRT_PLUGIN_PATH, built from fa3_forward.cuh's
# ATTNRT_SPARSE_Q_BUFS / ATTNRT_SPARSE_STAGES_HD64): main (1 Q, 2 stages), q1s4 (1 Q, 4 stages
# at hd64), q2 (2 Q, 2 stages), q2s4 (2 Q, 4 stages at hd64). Forward, hd64 and hd128, S2048
# and S8192, five mods, two rounds alternated.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call1; mkdir -p $O
trap 'cd $O/.. && tar czf call1.tgz call1 && rm -rf call1' EXIT
nvidia-smi -L > $O/gpu.txt
VARS="main q1s4 q2 q2s4"
MODS=causal,dense,block_sparse_90,sliding_window_256,document_mask
for v in $VARS; do
  for hd in 64 128; do
    ATTNRT_PLUGIN_PATH=$PWD/variants/$v ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 200 bin/attnrt_flex_bench --hdim $hd \
      --seqlen 2048 --mods $MODS --backward 0 --reps 1 > $O/warm_${v}_$hd.txt 2>&1 &
  done
done
wait
echo "warm done $SECONDS s"; grep -il "error\|fail" $O/warm_* | head
for r in 1 2; do
  for hd in 64 128; do
    for v in $VARS; do
      ATTNRT_PLUGIN_PATH=$PWD/variants/$v ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 100 bin/attnrt_flex_bench --hdim $hd \
        --seqlen 2048,8192 --mods $MODS --backward 0 --reps 20 --csv $O/${v}_hd${hd}_$r.csv > $O/${v}_hd${hd}_$r.txt 2>&1
      echo "== $v hd$hd round $r ($SECONDS s)"
      grep -h "^flex_attention,\|flash_attention_3,causal" $O/${v}_hd${hd}_$r.csv | cut -d, -f1,2,5,7,10 | sed 's/prepare [0-9.]* ms; //' | tr '\n' ' '; echo
    done
  done
done
