#!/usr/bin/env bash
# Issue 15: correctness of this tree's backward kernels (fa3_backward.cuh changed for flex's
# block-sparse walk; flash_attention_3's and sink's backwards share the file): every flex
# backward case (the Hopper backward and both flash_attention_2 dK/dV kernels), flash_attention_3's
# edge and deterministic cases, the sink grid; then compute-sanitizer racecheck and synccheck on
# two flex backward cases (the Hopper kernel only).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_steps4
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call4; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
summary() { grep -E "^\[  (PASSED|FAILED)|FAILED  \]" "$1" | head -20; echo "OK: $(grep -c '^\[       OK' "$1")"; }
timeout 300 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Backward*:FlexGpuRefusals.*' > $O/flex_backward.txt 2>&1
echo "flex backward rc=$?"; summary $O/flex_backward.txt
timeout 120 bin/attnrt_gpu_tests --gtest_filter='Edge/FlashAttention3.*:Cases/FlashAttention3Deterministic.*:Sink/SinkGrid.*' > $O/fa3_sink.txt 2>&1
echo "fa3/sink rc=$?"; summary $O/fa3_sink.txt
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for tool in racecheck synccheck; do
  timeout 100 $SAN --tool $tool --kernel-name regex:attnrt_flex_hopper_backward bin/attnrt_gpu_tests \
    --gtest_filter='Mods/FlexGpu.Backward*/bf16_hd128_random_block_sparse:Mods/FlexGpu.Backward*/bf16_hd64_block_causal_window_1k' \
    > $O/sanitizer_$tool.txt 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|hazard|PASSED|FAILED" $O/sanitizer_$tool.txt | head -5
done
cd $O/.. && tar czf call4.tgz call4 && rm -rf call4
