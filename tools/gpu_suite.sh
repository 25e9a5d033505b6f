#!/usr/bin/env bash
# The GPU suite in one call, run on the GPU machine from a staged .gpu/ (tools/gpu_stage.sh):
#   1. attnrt list --matrix                     which plugins are usable here and why not
#   2. attnrt_gpu_tests                         the correctness grid (gtest XML in $OUT)
#   3. compute-sanitizer memcheck and racecheck on a subset of the grid
#   4. attnrt run (auto device, bf16 fixture)   the main job on the GPU
#   5. attnrt bench + PyTorch anchors           same process tree, same GPU, then the ratio table
#   6. attnrt bench --decode + decode anchors   paged_attention's decode bandwidth (issue 17)
# Logs and CSVs go to $OUT (or /tmp/attnrt_gpu). SUITE_STEPS="1 2 3 4 5" selects steps;
# GTEST_FILTER narrows step 2, BENCH_BACKENDS / BENCH_ARGS shape step 5; SUITE_TAR=1 packs $OUT into
# one suite.tgz at the end.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-/tmp/attnrt_gpu}"
mkdir -p "$out"
steps="${SUITE_STEPS:-1 2 3 4 5 6}"
# cuBLAS for eager on CUDA: the toolkit's, else the one PyTorch ships.
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null || true)
# cuDNN for sdpa on CUDA (opened at run time): PyTorch's own (the library its cuDNN anchors run),
# else the system's (found by the loader's cache). ATTNRT_CUDNN_LIBRARY overrides both.
cudnn_dir=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null || true)
# The staged Debian libraries (yaml-cpp, fmt, spdlog, gomp) sit in lib/ beside libattnrt.
export LD_LIBRARY_PATH="$here/lib:${cudnn_dir}:/usr/local/cuda/lib64:${cublas_dir}:${LD_LIBRARY_PATH:-}"
attnrt="$here/bin/attnrt"
status=0
# The copy may arrive group- or world-writable; attnrt refuses plugin folders writable by others.
chmod -R go-w "$here" 2> /dev/null || true
step() { [[ " $steps " == *" $1 "* ]]; }

if step 1; then
  echo "=== 1. attnrt list --matrix"
  "$attnrt" list --matrix 2>&1 | tee "$out/list.txt"
fi
if step 2; then
  echo "=== 2. correctness grid"
  "$here/bin/attnrt_gpu_tests" --gtest_filter="${GTEST_FILTER:-*}" --gtest_output=xml:"$out/gpu_tests.xml" \
    > "$out/gpu_tests.txt" 2>&1 || status=1
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? from .* ran|FAILED TEST" "$out/gpu_tests.txt" | tail -n 30
fi
if step 3; then
  echo "=== 3. compute-sanitizer"
  subset='Grid/FlashAttention2Grid.*/bf16_hd128_gqa4_causal_200:Grid/FlashAttention2Grid.*/fp16_hd64_varlen_causal_gqa:Grid/FlashAttention2Grid.*/bf16_hd256_mqa_window_300:Eager/EagerCudaFeatures.*/bf16_sinks_causal_gqa:Eager/EagerCudaFeatures.*/fp32_paged_decode:Cases/PagedGpu.*/bf16_hd128_decode_gqa4_page16:Cases/PagedGpu.*/fp16_hd128_varlen_chunked_prefill:Cases/PagedGpu.*/bf16_hd128_gptoss_sinks_window:PagedGpuSplit.*:PagedGpuAppend.*:Sdpa/SdpaCudaGrid.*/bf16_hd128_varlen_ragged_window'
  for tool in memcheck racecheck; do
    compute-sanitizer --tool "$tool" --error-exitcode 7 "$here/bin/attnrt_gpu_tests" --gtest_filter="$subset" \
      > "$out/sanitizer_$tool.txt" 2>&1
    rc=$?
    echo "$tool: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$out/sanitizer_$tool.txt" | tr '\n' ' ')"
    [ $rc -eq 0 ] || status=1
  done
fi
if step 4; then
  echo "=== 4. main job on the GPU (attn_implementation: auto, fixture in bf16)"
  "$attnrt" run workload.dtype=bf16 2>&1 | tee "$out/run.txt" || status=1
fi
if step 5; then
  echo "=== 5. benchmark and PyTorch anchors"
  "$attnrt" bench attnrt.device=cuda --backends "${BENCH_BACKENDS:-flash_attention_2,sdpa}" --csv "$out/attnrt_bench.csv" \
    ${BENCH_ARGS:-} > "$out/attnrt_bench.txt" 2>&1 || status=1
  OUT="$out" python3 "$here/torch_sdpa_anchors.py" --no-flex > "$out/anchors.txt" 2>&1 || status=1
  python3 "$here/bench_join.py" "$out/attnrt_bench.csv" "$out/anchors.csv" | tee "$out/ratios.txt"
fi
if step 6; then
  echo "=== 6. decode benchmark (effective TB/s) and PyTorch's contiguous decode anchors"
  "$attnrt" bench attnrt.device=cuda --decode --backends "${DECODE_BACKENDS:-paged_attention,flash_attention_2}" \
    --page-size 16,64,0 --csv "$out/decode_bench.csv" ${DECODE_ARGS:-} > "$out/decode_bench.txt" 2>&1 || status=1
  cat "$out/decode_bench.txt"
  OUT="$out" python3 "$here/torch_decode_anchors.py" > "$out/decode_anchors.txt" 2>&1 || status=1
  grep -v -e Warning -e "fn = lambda" "$out/decode_anchors.txt"
  python3 "$here/decode_ratios.py" "$out/decode_bench.csv" "$out/decode_anchors.csv" "$out/decode_ratios.csv" |
    tee "$out/decode_ratios.md"
fi
# SUITE_TAR=1: everything in one archive, $out/suite.tgz, and the loose files removed. The device
# tool brings back a bounded number of files from $OUT; a suite run leaves dozens.
if [[ "${SUITE_TAR:-0}" == 1 ]]; then
  (cd "$out" && files=$(ls -A | grep -v '^suite.tgz$') && [[ -n "$files" ]] && tar czf suite.tgz $files && rm -rf $files)
fi
exit $status
