#!/usr/bin/env bash
# Issue 17, call 7: the paged correctness tests with the corrected paged-vs-flash_attention_2 bound.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
timeout 150 ./bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $O/paged_tests.txt 2>&1
echo "paged tests rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED" $O/paged_tests.txt | tail -6
