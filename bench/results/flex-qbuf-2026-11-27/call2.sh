#!/usr/bin/env bash
# Issue 15, call 2: the 128-row flex forward without ping-pong (its two consumer warpgroups
# no longer take turns, nor meet at each tile's start), with one or two Q buffers and 2 or 4
# K/V stages at hd64: np (1 Q), npq2 (2 Q), npq2s4 (2 Q, 4 stages at hd64), against main.
# Forward, hd64 and hd128, S2048 and S8192, five mods, two rounds alternated; then the bytes
# floor of the S2048 sparse call (floor.py).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call2; mkdir -p $O
trap 'cd $O/.. && tar czf call2.tgz call2 && rm -rf call2' EXIT
nvidia-smi -L > $O/gpu.txt
VARS="main np npq2 npq2s4"
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
      awk -F, '/^flex_attention,|^flash_attention_3,causal/ {sub(/.*pipelined /, "", $10); sub(/ ms/, "", $10); printf "%s:%s:%s ", ($1 == "flex_attention" ? $2 : "FA3"), $5, $10} END {print ""}' $O/${v}_hd${hd}_$r.csv
    done
  done
done
python3 $HERE/floor.py 2>&1 | tee $O/floor.txt
