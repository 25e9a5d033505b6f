#!/usr/bin/env bash
# Issue 15, call 5: the block-sparse forward's scheduling warp sleeps while it waits (a free tile
# slot: mbarrier test_wait and __nanosleep(N) instead of CUTLASS's try_wait loop, which woke on
# every barrier event of the CTA; the claim throttle's sleep 64 -> N ns). ncu's SASS of the causal
# forward (flex-fixed-cost-2026-11-27 call 3) had the two waits' loops at 1.05 M warp instructions,
# the flex kernel's whole excess over flash_attention_3's, on the SM sub-partition of one warp of
# every consumer warpgroup. Variants s256, s1024 (N = ATTNRT_SCHED_SLEEP) against main. Forward,
# hd64 and hd128, S2048 and S8192, five mods, three rounds alternated.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call5; mkdir -p $O
trap 'cd $O/.. && tar czf call5.tgz call5 && rm -rf call5' EXIT
nvidia-smi -L > $O/gpu.txt
VARS="main s256 s1024"
MODS=causal,dense,block_sparse_90,sliding_window_256,document_mask
for v in $VARS; do
  for hd in 64 128; do
    ATTNRT_PLUGIN_PATH=$PWD/variants/$v ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 200 bin/attnrt_flex_bench --hdim $hd \
      --seqlen 2048 --mods $MODS --backward 0 --reps 1 > $O/warm_${v}_$hd.txt 2>&1 &
  done
done
wait
echo "warm done $SECONDS s"; grep -il "error\|fail" $O/warm_* | head
for r in 1 2 3; do
  for hd in 64 128; do
    for v in $VARS; do
      ATTNRT_PLUGIN_PATH=$PWD/variants/$v ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 100 bin/attnrt_flex_bench --hdim $hd \
        --seqlen 2048,8192 --mods $MODS --backward 0 --reps 20 --csv $O/${v}_hd${hd}_$r.csv > $O/${v}_hd${hd}_$r.txt 2>&1
      echo "== $v hd$hd round $r ($SECONDS s)"
      awk -F, '/^flex_attention,|^flash_attention_3,causal/ {sub(/.*pipelined /, "", $10); sub(/ ms/, "", $10); printf "%s:%s:%s ", ($1 == "flex_attention" ? $2 : "FA3"), $5, $10} END {print ""}' $O/${v}_hd${hd}_$r.csv
    done
  done
done
