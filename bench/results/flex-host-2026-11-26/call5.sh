#!/usr/bin/env bash
# Issue 15, the final tree (the host-path trim, create_block_mask's list kernels sharing their
# row-closing helper): create_block_mask against the CPU plugin, the fp16 hd128 forward cases
# (both forwards, the counter zeroed by the block-state kernel where there is a block mask) and
# the fp16 hd128 backward cases, within the step limits.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_host5
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call5; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
summary() { grep -E "^\[  (PASSED|FAILED)|FAILED  \]|timing" "$1" | head -20; echo "OK: $(grep -c '^\[       OK' "$1")"; }
timeout 60 bin/attnrt_gpu_tests --gtest_filter='FlexGpuBlockMask.*:FlexGpuRefusals.*' > $O/block_mask.txt 2>&1
echo "block mask rc=$?"; summary $O/block_mask.txt
timeout 100 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Forward*fp16_hd128*' > $O/forward.txt 2>&1
echo "forward rc=$?"; summary $O/forward.txt
timeout 100 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Backward*fp16_hd128*' > $O/backward.txt 2>&1
echo "backward rc=$?"; summary $O/backward.txt
cd $O/.. && tar czf call5.tgz call5 && rm -rf call5
