#!/usr/bin/env bash
# Issue 16, call 4: as call 3, with sdpa offering paged KV for decode only (seqlen_q 1) and writing
# the empty rows of sequences with no cached key (call 3: non-finite rows from cuDNN with more
# than one query row). The paged
# GPU tests, which now also run sdpa on every paged case cuDNN takes (under the same rule against
# the fp64 reference, -1 padded block tables, NaN in unused pages), then the whole sdpa suite again.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
ATTNRT_PLUGIN_PATH=$PWD/variants/final timeout 150 ./bin/attnrt_gpu_tests --gtest_filter='*Paged*' \
  --gtest_output=xml:$O/paged_with_sdpa.xml > $O/paged_with_sdpa.txt 2>&1
echo "paged tests rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED" $O/paged_with_sdpa.txt | tail -8
grep -m6 -B1 -A3 "Failure" $O/paged_with_sdpa.txt
grep -o 'name="sdpa" value="[^"]*"' $O/paged_with_sdpa.xml | sort | uniq -c | head
ATTNRT_PLUGIN_PATH=$PWD/variants/final timeout 300 ./bin/attnrt_gpu_tests --gtest_filter='Sdpa/*:SdpaCuda.*:SdpaCudaRandom.*' \
  > $O/sdpa_suite.txt 2>&1
echo "sdpa suite rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED" $O/sdpa_suite.txt | tail -6
