#!/usr/bin/env bash
# Issue 15 / 13, call 2 (same tree as call 1): the rest of the flex GPU tests on the final Hopper
# backward and the review commit: bf16 backward (every case, three dK/dV paths) and the hd64
# forward cases; then flash_attention_3's random grid at head_dim 96 and 192, whose backward
# (flash_attention_2's kernels at those head dims) had never run on the H100 (issue 13).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call2
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call2; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
summary() { grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" "$1" | head -30; echo "OK: $(grep -c '^\[       OK' "$1")"; }
timeout 250 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Backward*bf16*' > $O/flex_backward_bf16.txt 2>&1
echo "backward bf16 rc=$?"; summary $O/flex_backward_bf16.txt
timeout 150 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Forward*hd64*' > $O/flex_forward_hd64.txt 2>&1
echo "forward hd64 rc=$?"; summary $O/flex_forward_hd64.txt
timeout 150 bin/attnrt_gpu_tests --gtest_filter='RandomHd96Hd192/FlashAttention3.*' > $O/fa3_hd96_hd192.txt 2>&1
echo "fa3 hd96/192 rc=$?"; summary $O/fa3_hd96_hd192.txt
cd $O/.. && tar czf call2.tgz call2 && rm -rf call2
