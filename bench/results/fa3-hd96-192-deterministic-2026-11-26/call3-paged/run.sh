#!/usr/bin/env bash
# Issue 13, 2026-11-26 (third session), call 3: flash_attention_3's paged KV forward (NaN in the
# page rows past each sequence's keys), its refusals, a regression sample of the forward grids,
# memcheck and racecheck on paged cases.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3p; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
t() {  # name filter timeout
  timeout $3 ./bin/attnrt_gpu_tests --gtest_filter="$2" > $O/tests_$1.txt 2>&1
  echo "tests $1 rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_$1.txt | tail -6; grep -B2 -A6 "Failure" $O/tests_$1.txt | head -30
}
t paged 'Cases/FlashAttention3Paged.*:FlashAttention3Support.*' 120
t regression 'Random/FlashAttention3.*/r01*:Edge/FlashAttention3.*/fp16_hd128*:Cases/FlashAttention3Deterministic.*/hd64_varlen_causal' 70
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 7 ./bin/attnrt_gpu_tests --gtest_filter='Cases/FlashAttention3Paged.*/bf16_hd128_chunked_prefill_causal_page128:Cases/FlashAttention3Paged.*/fp16_hd64_softcap_129_page384' > $O/$tool.txt 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED|hazard" $O/$tool.txt | head -5
done
cd ${OUT:-/tmp/o} && tar czf fa3p.tgz fa3p && rm -rf fa3p
