#!/usr/bin/env bash
# Issue 15, 2026-11-27, call 6: the backward bar (1.0x PyTorch's compiled flex) at the lengths
# not measured since the backward's last change (S8192 only there): hd64 and hd128, S2048 and
# S16384, every mod, forward and backward, one round of attnrt_flex_bench, then
# torch_flex_anchors.py --backward with the same arguments.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/fc_final
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call6; mkdir -p $O
trap 'cd $O/.. && tar czf call6.tgz call6 && rm -rf call6' EXIT
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
A="--hdim 64,128 --seqlen 2048,16384 --mods causal,sliding_window_256,prefix_lm,document_mask,alibi,softcap,relative_bias,dense,block_sparse_90"
timeout 230 bin/attnrt_flex_bench $A --backward 1 --reps 5 --csv $O/flex.csv > $O/flex.txt 2>&1; echo "flex rc=$?"
timeout 300 python3 torch_flex_anchors.py $A --backward --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1; echo "torch rc=$?"
python3 flex_ratios.py $O/flex.csv $O/torch_flex.csv > $O/ratios.md 2>&1
grep -E "^\| [0-9]" $O/ratios.md | cut -d'|' -f2-6,10
