#!/usr/bin/env bash
# Issue 15, call 3 (main's plugin): what the S2048 sparse call's time is made of. hd64 and
# hd128, S2048, 16 heads, batch 1, 2, 4, 8 (256 to 2048 tiles of 128 rows): dense,
# block_sparse_90 and causal, with flash_attention_3's causal; then at batch 2 the sparse mask on
# each tile height forced (ATTNRT_FLEX_ROWS=128|192, hd64).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call3; mkdir -p $O
trap 'cd $O/.. && tar czf call3.tgz call3 && rm -rf call3' EXIT
nvidia-smi -L > $O/gpu.txt
export ATTNRT_CACHE_DIR=/tmp/fc_main
MODS=causal,dense,block_sparse_90
show() { awk -F, '/^flex_attention,|^flash_attention_3,causal/ {sub(/.*pipelined /, "", $10); sub(/ ms/, "", $10); printf "%s:%s ", ($1 == "flex_attention" ? $2 : "FA3"), $10} END {print ""}' $1; }
for hd in 64 128; do
  timeout 200 bin/attnrt_flex_bench --hdim $hd --seqlen 2048 --mods $MODS --backward 0 --reps 1 > $O/warm_$hd.txt 2>&1 &
done
wait
for r in 1 2; do
  for hd in 64 128; do
    for b in 1 2 4 8; do
      timeout 100 bin/attnrt_flex_bench --hdim $hd --seqlen 2048 --batch $b --mods $MODS --backward 0 --reps 20 \
        --csv $O/hd${hd}_b${b}_$r.csv > $O/hd${hd}_b${b}_$r.txt 2>&1
      echo "hd$hd b$b r$r: $(show $O/hd${hd}_b${b}_$r.csv)"
    done
  done
  for rows in 128 192; do
    ATTNRT_FLEX_ROWS=$rows timeout 100 bin/attnrt_flex_bench --hdim 64 --seqlen 2048 --mods dense,block_sparse_90 \
      --backward 0 --reps 20 --csv $O/rows${rows}_$r.csv > $O/rows${rows}_$r.txt 2>&1
    echo "hd64 rows $rows r$r: $(show $O/rows${rows}_$r.csv)"
  done
done
