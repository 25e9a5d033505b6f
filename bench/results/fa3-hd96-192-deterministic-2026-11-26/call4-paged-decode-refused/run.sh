#!/usr/bin/env bash
# Issue 13, call 4: the paged cases again after decode-sized paged calls became refusals.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3p2; mkdir -p $O
timeout 100 ./bin/attnrt_gpu_tests --gtest_filter='Cases/FlashAttention3Paged.*:FlashAttention3Support.*:Random/FlashAttention3.*/r01*' > $O/tests.txt 2>&1
echo "rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests.txt | tail -6
cd ${OUT:-/tmp/o} && tar czf fa3p2.tgz fa3p2 && rm -rf fa3p2
