#!/usr/bin/env bash
# Issue 15: the flex GPU tests on the plugin as committed, with ATTNRT_FLEX_ROWS=auto (the per-call
# tile height at every length: both forward kernels and the walks' sums on every hd64 case with a
# block mask). Eight shards, each with its own kernel cache and two OpenMP threads for the CPU
# references (call 3's four shards sharing one cache ran 38 cases in 330 s).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call5; mkdir -p $O
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=2 ATTNRT_FLEX_ROWS=auto ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 540 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/flex_tests_$i.txt 2>&1 &
done
wait
echo "== flex tests (auto): RUN $(cat $O/flex_tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/flex_tests_*.txt | grep -c '^\[       OK'), FAILED $(cat $O/flex_tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|^\[  PASSED\|Failure" $O/flex_tests_*.txt | head -20
cd $O/.. && tar czf call5.tgz call5 && rm -rf call5
