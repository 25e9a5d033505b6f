#!/usr/bin/env bash
# Issue 15: the S2048 rows against PyTorch's compiled flex_attention after the host path's trim
# (this tree), forward and backward: attnrt_flex_bench --hdim 128,64 --seqlen 2048 --backward 1,
# then torch_flex_anchors.py with the same arguments in the same call; flex_ratios.py joins them.
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_host4
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call4; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
timeout 230 bin/attnrt_flex_bench --hdim 128,64 --seqlen 2048 --backward 1 --csv $O/flex_bench.csv > $O/flex_bench.txt 2>&1
echo "bench rc=$?"
timeout 250 python3 torch_flex_anchors.py --hdim 128,64 --seqlen 2048 --backward --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1
echo "torch rc=$?"
python3 flex_ratios.py $O/flex_bench.csv $O/torch_flex.csv > $O/ratios.md 2>&1; cat $O/ratios.md
cd $O/.. && tar czf call4.tgz call4 && rm -rf call4
