#!/usr/bin/env bash
# Issue 15, call 1: create_block_mask on CUDA (ABI 1.4) against the CPU plugin's lists, with the
# time of a 32k x 32k broadcast causal mask; then the flex GPU tests that never ran on the final
# Hopper backward (fp16, every case, each through the Hopper backward and flash_attention_2's two
# dK/dV kernels) and the hd128 forward cases (both forwards) on the tree with the review commit
# 794f12f (the shared TMA call layout and L2 bands); then flash_attention_3's hd128 edge grid and
# the sink grid, which that commit's call_layout also feeds.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call1
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
summary() { grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" "$1" | head -30; echo "OK: $(grep -c '^\[       OK' "$1")"; }
timeout 90 bin/attnrt_gpu_tests --gtest_filter='FlexGpuBlockMask.*' > $O/block_mask_tests.txt 2>&1
echo "block mask rc=$?"; summary $O/block_mask_tests.txt; grep timing $O/block_mask_tests.txt
timeout 260 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Backward*fp16*' > $O/flex_backward_fp16.txt 2>&1
echo "backward fp16 rc=$?"; summary $O/flex_backward_fp16.txt
timeout 140 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Forward*hd128*:FlexGpuRefusals.*' > $O/flex_forward_hd128.txt 2>&1
echo "forward hd128 rc=$?"; summary $O/flex_forward_hd128.txt
timeout 50 bin/attnrt_gpu_tests --gtest_filter='Edge/FlashAttention3.*hd128*:Sink/SinkGrid.*' > $O/fa3_sink.txt 2>&1
echo "fa3/sink rc=$?"; summary $O/fa3_sink.txt
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
