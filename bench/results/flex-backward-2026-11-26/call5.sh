#!/usr/bin/env bash
# Issue 15, call 5: the dK/dV kernels now walk only the query tiles a block-sparse policy does
# not skip (nothing loaded for the others; the standard policy's walk is unchanged). From a
# fresh .gpu/ (tools/gpu_stage.sh): the flex backward tests, then flash_attention_2's and sink's
# grids (their dK/dV loops were restructured).
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call5
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call5; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
timeout 280 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Backward*:FlexGpuRefusals.*' > $O/flex_backward_tests.txt 2>&1
echo "flex backward tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/flex_backward_tests.txt | head -20
timeout 250 bin/attnrt_gpu_tests --gtest_filter='Grid/FlashAttention2Grid.*:Sink/SinkGrid.*:FlashAttention2Support.*' > $O/fa2_sink_grids.txt 2>&1
echo "fa2/sink grids rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/fa2_sink_grids.txt | head -10
cd $O/.. && tar czf call5.tgz call5 && rm -rf call5
