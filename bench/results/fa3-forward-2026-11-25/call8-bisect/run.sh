#!/usr/bin/env bash
# Issue 13, forward call 8: bisecting dyn4's non-causal loss against w3. v1 = w3's kernel with
# this tree's host side (AttentionParams.tile_counter, forward workspace); v1b = dyn4's kernel
# launched with no counter and band 1 (every grid dealt in turn). Forward only, alternated twice.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
for round in 1 2; do
  for v in w3 v1 v1b dyn4; do
    ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 60 ./bin/attnrt bench attnrt.device=cuda --no-backward --backends flash_attention_3 --hdim 64,128 --seqlen 2048,8192 --csv $O/ab_${v}_$round.csv > $O/ab_${v}_$round.txt 2>&1
    echo "ab $v $round rc=$?"; cut -d, -f5 $O/ab_${v}_$round.csv | tr '\n' ' '; echo
  done
done
cd ${OUT:-/tmp/o} && tar czf fa3.tgz fa3 && rm -rf fa3
