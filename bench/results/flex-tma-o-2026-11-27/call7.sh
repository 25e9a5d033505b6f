#!/usr/bin/env bash
# Issue 15, 2026-11-27 (seventh session), call 7: the new test of a strided output
# (FlashAttention3Support.WritesAStridedOutputAndNothingPastItsRows: head-major rows padded by 8,
# head_dim 96 and 128) on the committed build, plain and under compute-sanitizer memcheck.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call7; mkdir -p $O
trap 'cd $O/.. && tar czf call7.tgz call7 && rm -rf call7' EXIT
T='FlashAttention3Support.*'
timeout 120 bin/attnrt_gpu_tests --gtest_filter="$T" > $O/tests.txt 2>&1
echo "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)|^\[       OK|Failure' $O/tests.txt | tr '\n' ' ')"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
timeout 150 $SAN --tool memcheck --error-exitcode 7 bin/attnrt_gpu_tests \
  --gtest_filter='FlashAttention3Support.WritesAStridedOutputAndNothingPastItsRows' > $O/memcheck.txt 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $O/memcheck.txt | tr '\n' ' ')"
