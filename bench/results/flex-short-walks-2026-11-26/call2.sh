#!/usr/bin/env bash
# Issue 15: the per-element mask bits of a partial tile (flash_attention_3's keys_seen in the
# forward, seen in the backward: one call of the mask_mod per accumulator column) evaluated in a
# rolled loop (#pragma unroll 1, call 1's hottest instructions) against unrolled by 8 (.gpu/var8)
# and fully (.gpu/varfull); .gpu/cur is commit 798e528's flex plugin. Alternated, two rounds.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_walks2
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call2; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
A="--hdim 64,128 --seqlen 2048,16384 --mods causal,sliding_window_256,document_mask,prefix_lm,block_sparse_90 --backward 1 --reps 10"
for r in 1 2; do
  for v in cur var8 varfull; do
    t=$([ $r = 1 ] && echo 110 || echo 60)
    ATTNRT_PLUGIN_PATH=$PWD/$v timeout $t bin/attnrt_flex_bench $A --csv $O/flex_${v}_$r.csv > $O/flex_${v}_$r.txt 2>&1
    echo "$v $r rc=$?"
  done
done
cd $O/.. && tar czf call2.tgz call2 && rm -rf call2
