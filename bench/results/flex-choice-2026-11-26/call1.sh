#!/usr/bin/env bash
# Issue 15: flex_attention's per-call tile height at head_dim 64 (choice.patch of
# flex-rows192-2026-11-26, its statistics a warp an item) with the block-state kernel a warp a row
# (states.patch), as `new` (.gpu's plugin), against main's plugin (`base`, variants/base).
# 1. ncu (clocks left alone, caches flushed) times the small kernels and the forwards, both plugins,
#    ATTNRT_FLEX_ROWS=auto for `new` (the choice at 2k too).
# 2. attnrt_flex_bench hd64 S 2k/8k/16k, every mod, forward, new/base alternated, two rounds.
# 3. PyTorch's compiled flex on the same shapes.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
NCU="ncu --clock-control none --metrics gpu__time_duration.sum -k regex:attnrt_flex"
S="--hdim 64 --seqlen 2048,16384 --mods causal,document_mask,sliding_window_256,block_sparse_90 --backward 0 --reps 1"
ATTNRT_FLEX_ROWS=auto ATTNRT_CACHE_DIR=/tmp/fc_new timeout 100 $NCU bin/attnrt_flex_bench $S > $O/ncu_new.txt 2>&1; echo "ncu new rc=$?"
ATTNRT_PLUGIN_PATH=$PWD/variants/base ATTNRT_CACHE_DIR=/tmp/fc_base timeout 100 $NCU bin/attnrt_flex_bench $S > $O/ncu_base.txt 2>&1; echo "ncu base rc=$?"
A="--hdim 64 --seqlen 2048,8192,16384 --mods causal,sliding_window_256,prefix_lm,document_mask,alibi,softcap,dense,block_sparse_90"
for r in 1 2; do for v in new base; do
  P=""; [ $v = base ] && P=$PWD/variants/base
  ATTNRT_PLUGIN_PATH=$P ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 90 bin/attnrt_flex_bench $A --backward 0 --reps 10 --csv $O/flex_${v}_$r.csv > $O/flex_${v}_$r.txt 2>&1
  echo "$v $r rc=$?"
done; done
paste -d, <(cut -d, -f1,2,5,7 $O/flex_new_1.csv) <(cut -d, -f7 $O/flex_new_2.csv) <(cut -d, -f7 $O/flex_base_1.csv) <(cut -d, -f7 $O/flex_base_2.csv)
timeout 200 python3 torch_flex_anchors.py $A --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1; echo "torch rc=$?"
for f in new_1 new_2 base_1 base_2; do python3 flex_ratios.py $O/flex_$f.csv $O/torch_flex.csv > $O/ratios_$f.md 2>&1; done
grep -E "^\| [0-9]" $O/ratios_new_2.md | head -30
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
