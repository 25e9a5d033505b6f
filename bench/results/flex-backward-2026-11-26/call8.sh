#!/usr/bin/env bash
# Issue 15, call 8 (call 7's .gpu/ with attnrt_flex_bench and torch_flex_anchors.py of this
# commit: two more mods, `dense` (every 128 x 128 block visible) and `block_sparse_90` (a tenth of
# the blocks, whole)): the block-sparse bar (a 90%-sparse block mask at least 5x faster than
# dense), forward and backward, at S8192, hd128 and hd64, beside PyTorch's compiled flex.
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call8
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call8; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
timeout 200 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192 --backward 1 --csv $O/flex_bench.csv > $O/flex_bench.txt 2>&1
echo "flex bench rc=$?"; grep -E "dense|sparse" $O/flex_bench.csv
timeout 330 python3 torch_flex_anchors.py --hdim 128,64 --seqlen 8192 --backward --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1
echo "torch anchors rc=$?"; grep -E "dense|sparse" $O/torch_flex.csv
cd $O/.. && tar czf call8.tgz call8 && rm -rf call8
