#!/usr/bin/env bash
# Issue 15 on this tree's kernels (calls 1-3 here and flex-backward-steps-2026-11-26): every mod
# at hd128 and hd64, S2048, 8192 and 16384, forward and backward, against PyTorch's compiled flex
# in the same call (attnrt_flex_bench, then torch_flex_anchors.py with the same arguments;
# flex_ratios.py joins them into call4/ratios.md).
set -u
cd "$(dirname "$0")/../../../.gpu"
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
export LD_LIBRARY_PATH=$PWD/lib:$(py_lib nvidia.cublas):/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_uniform4
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call4; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
A="--hdim 128,64 --seqlen 2048,8192,16384"
timeout 260 bin/attnrt_flex_bench $A --backward 1 --csv $O/flex.csv > $O/flex.txt 2>&1; echo "flex rc=$?"
timeout 300 python3 torch_flex_anchors.py $A --backward --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1; echo "torch rc=$?"
python3 flex_ratios.py $O/flex.csv $O/torch_flex.csv > $O/ratios.md 2>&1; cat $O/ratios.md
cd $O/.. && tar czf call4.tgz call4 && rm -rf call4
