#!/usr/bin/env bash
# Issue 15, call 5: the committed tree's flex GPU tests, all of them (the forward through both
# kernels, the backward through both dK/dV kernels, the refusals), in one process; then
# flash_attention_3's support tests and its paged cases.
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call5
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call5; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
timeout 470 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.*:FlexGpuRefusals.*' > $O/flex_tests.txt 2>&1
echo "flex tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/flex_tests.txt | head -30
timeout 60 bin/attnrt_gpu_tests --gtest_filter='FlashAttention3Support.*:Cases/FlashAttention3Paged.*' > $O/fa3.txt 2>&1
echo "fa3 rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/fa3.txt | head -10
cd $O/.. && tar czf call5.tgz call5 && rm -rf call5
