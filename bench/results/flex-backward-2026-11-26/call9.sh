#!/usr/bin/env bash
# Issue 15, call 9: the final kernels (the block-state walks ask 8 key blocks (forward) or 4 query
# steps (backward) at a time, independent loads instead of a chain): every flex GPU test, then
# attnrt_flex_bench --backward 1 and torch_flex_anchors.py --backward at S8192, hd128 and hd64,
# the dense and 90%-sparse mods included. From a fresh .gpu/ (tools/gpu_stage.sh).
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call9
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call9; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
timeout 270 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.*:FlexGpuRefusals.*' > $O/flex_tests.txt 2>&1
echo "flex tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/flex_tests.txt | head -20
timeout 120 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192 --backward 1 --csv $O/flex_bench.csv > $O/flex_bench.txt 2>&1
echo "flex bench rc=$?"; grep -E "dense|sparse" $O/flex_bench.csv
timeout 170 python3 torch_flex_anchors.py --hdim 128,64 --seqlen 8192 --backward --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1
echo "torch anchors rc=$?"
cd $O/.. && tar czf call9.tgz call9 && rm -rf call9
