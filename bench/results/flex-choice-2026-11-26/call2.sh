#!/usr/bin/env bash
# Issue 15, after call 1: the walks' sums folded into attnrt_flex_block_states (one launch fewer:
# a warp a tile of each height counts the blocks its mask rows list, through a bitmap in shared
# memory), `new` (.gpu's plugin) against main's (`base`), and `new` with ATTNRT_FLEX_ROWS=128 (the
# block-state kernel's change alone). attnrt_flex_bench forward hd64 S 8k/16k, every mod, three
# variants alternated, two rounds.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call2; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
A="--hdim 64 --seqlen 8192,16384 --mods causal,sliding_window_256,prefix_lm,document_mask,alibi,softcap,dense,block_sparse_90 --backward 0 --reps 10"
run() {  # variant label, then env assignments
  local v=$1 label=$2; shift 2
  env "$@" ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 100 bin/attnrt_flex_bench $A --csv $O/flex_${label}.csv > $O/flex_${label}.txt 2>&1
  echo "$label rc=$?"
}
for r in 1 2; do
  run new new_$r ATTNRT_PLUGIN_PATH=
  run base base_$r ATTNRT_PLUGIN_PATH=$PWD/variants/base
  run new new128_$r ATTNRT_PLUGIN_PATH= ATTNRT_FLEX_ROWS=128
done
paste -d, <(cut -d, -f1,2,5 $O/flex_new_1.csv) <(cut -d, -f7 $O/flex_new_1.csv) <(cut -d, -f7 $O/flex_new_2.csv) \
  <(cut -d, -f7 $O/flex_base_1.csv) <(cut -d, -f7 $O/flex_base_2.csv) <(cut -d, -f7 $O/flex_new128_1.csv) <(cut -d, -f7 $O/flex_new128_2.csv)
cd $O/.. && tar czf call2.tgz call2 && rm -rf call2
