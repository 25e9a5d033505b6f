#!/usr/bin/env bash
# Issue 15, call 7: call 5 again on the committed tree (the skipped-tile walk moved from the two
# dK/dV kernels into QueryWalk::visited, the same code): the flex backward tests, then
# flash_attention_2's and sink's grids, plus the flex forward tests.
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call7
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call7; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
timeout 300 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.*:FlexGpuRefusals.*' > $O/flex_tests.txt 2>&1
echo "flex tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/flex_tests.txt | head -20
timeout 220 bin/attnrt_gpu_tests --gtest_filter='Grid/FlashAttention2Grid.*:Sink/SinkGrid.*:FlashAttention2Support.*' > $O/fa2_sink_grids.txt 2>&1
echo "fa2/sink grids rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/fa2_sink_grids.txt | head -10
cd $O/.. && tar czf call7.tgz call7 && rm -rf call7
