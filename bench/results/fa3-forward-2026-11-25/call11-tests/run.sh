#!/usr/bin/env bash
# Issue 13, forward call 11: the landed plugin (call 9's staged lib/) on FA3's random cases
# r000-r299 (r300-r399 ran in call 9), and compute-sanitizer racecheck on the two persistent
# cases call 9's time limit cut.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3; mkdir -p $O
t() {  # name filter timeout
  timeout $3 ./bin/attnrt_gpu_tests --gtest_filter="$2" > $O/tests_$1.txt 2>&1
  echo "tests $1 rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_$1.txt | tail -6; grep -A5 "Failure" $O/tests_$1.txt | head -12
}
t random012 'Random/FlashAttention3.*/r0*:Random/FlashAttention3.*/r1*:Random/FlashAttention3.*/r2*' 290
for c in fp16_hd128_persistent_varlen_window bf16_hd256_persistent_plain_b24_200; do
  timeout 140 compute-sanitizer --tool racecheck --error-exitcode 7 ./bin/attnrt_gpu_tests --gtest_filter="Edge/FlashAttention3.*/$c" > $O/racecheck_$c.txt 2>&1
  echo "racecheck $c rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $O/racecheck_$c.txt | head -3
done
cd ${OUT:-/tmp/o} && tar czf fa3.tgz fa3 && rm -rf fa3
