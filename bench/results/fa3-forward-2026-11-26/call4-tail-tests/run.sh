#!/usr/bin/env bash
# Issue 13, 2026-11-26 call 4 (same warm machine and staging as call 3): the edge cases call 3's
# limit cut (fp16 hd256 from plain_1000 on) and random r200-r299, on the tail-skip kernel.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3d; mkdir -p $O
t() {  # name filter timeout
  timeout $3 ./bin/attnrt_gpu_tests --gtest_filter="$2" > $O/tests_$1.txt 2>&1
  echo "tests $1 rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_$1.txt | tail -6; grep -A5 "Failure" $O/tests_$1.txt | head -12
}
t edge_rest 'Edge/FlashAttention3.*fp16_hd256_*' 100
t random2 'Random/FlashAttention3.*/r2*' 150
cd ${OUT:-/tmp/o} && tar czf fa3d.tgz fa3d && rm -rf fa3d
