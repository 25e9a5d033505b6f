#!/usr/bin/env bash
# Issue 15, 2026-11-27, call 5: the committed change against PyTorch's compiled flex, forward hd64,
# S2k/8k/16k, every mod: attnrt_flex_bench twice, then torch_flex_anchors.py with the same
# arguments (as bench/results/flex-choice-2026-11-26 call 4).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/fc_final
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call5; mkdir -p $O
trap 'cd $O/.. && tar czf call5.tgz call5 && rm -rf call5' EXIT
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
A="--hdim 64 --seqlen 2048,8192,16384 --mods causal,sliding_window_256,prefix_lm,document_mask,alibi,softcap,dense,block_sparse_90"
timeout 200 bin/attnrt_flex_bench $A --backward 0 --reps 10 --csv $O/flex_1.csv > $O/flex_1.txt 2>&1; echo "1 rc=$?"
timeout 100 bin/attnrt_flex_bench $A --backward 0 --reps 10 --csv $O/flex_2.csv > $O/flex_2.txt 2>&1; echo "2 rc=$?"
timeout 240 python3 torch_flex_anchors.py $A --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1; echo "torch rc=$?"
for r in 1 2; do python3 flex_ratios.py $O/flex_$r.csv $O/torch_flex.csv > $O/ratios_$r.md 2>&1; done
paste -d'|' <(grep -E "^\| [0-9]" $O/ratios_1.md | cut -d'|' -f2,4,6,7,10) <(grep -E "^\| [0-9]" $O/ratios_2.md | cut -d'|' -f6,10)
