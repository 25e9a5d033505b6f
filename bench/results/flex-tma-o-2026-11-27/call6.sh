#!/usr/bin/env bash
# Issue 15, 2026-11-27 (seventh session), call 6: the 361 cases of call 5's set that call 5 did not
# finish in its 400 s (call6_remaining.txt), same build, eight shards.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call6; mkdir -p $O
trap 'cd $O/.. && tar czf call6.tgz call6 && rm -rf call6' EXIT
F=$(paste -sd: ../bench/results/flex-tma-o-2026-11-27/call6_remaining.txt)
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=2 ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 480 bin/attnrt_gpu_tests --gtest_filter="$F" > $O/tests_$i.txt 2>&1 &
done
wait
echo "== tests ($SECONDS s): RUN $(cat $O/tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/tests_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/tests_*.txt | head -10
for f in $O/tests_*.txt; do awk '/^\[ RUN/{r=$4} /^\[       OK|^\[  FAILED|^\[  SKIPPED/{r=""} END{if(r!="") print "unfinished: "r}' $f; done
