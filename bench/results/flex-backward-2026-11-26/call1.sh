#!/usr/bin/env bash
# Issue 15, call 1: flex_attention's CUDA backward (flash_attention_2's kernels under the flex
# policy, compiled by NVRTC) against the fp64 reference, from .gpu/ (tools/gpu_stage.sh):
#   1. the flex GPU tests: forward and backward (both dK/dV kernels) of every mod, the refusals;
#   2. flash_attention_2's and sink's grids (their kernels share the changed policy headers);
#   3. compute-sanitizer memcheck on two flex backward cases (block-sparse, document mask).
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
timeout 240 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.*:FlexGpuRefusals.*' > $O/flex_tests.txt 2>&1
echo "flex tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/flex_tests.txt | head -20
timeout 200 bin/attnrt_gpu_tests --gtest_filter='Grid/FlashAttention2Grid.*:Sink/SinkGrid.*:FlashAttention2Support.*' > $O/fa2_sink_grids.txt 2>&1
echo "fa2/sink grids rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/fa2_sink_grids.txt | head -10
timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool memcheck bin/attnrt_gpu_tests \
  --gtest_filter='Mods/FlexGpu.BackwardWithinTwiceTheCpuPluginsError/bf16_hd128_random_block_sparse:Mods/FlexGpu.BackwardWithinTwiceTheCpuPluginsError/bf16_hd64_document_mask' > $O/memcheck.txt 2>&1
echo "memcheck rc=$?"; tail -3 $O/memcheck.txt
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
