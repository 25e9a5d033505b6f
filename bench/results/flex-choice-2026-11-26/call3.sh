#!/usr/bin/env bash
# Issue 15: the flex GPU tests with ATTNRT_FLEX_ROWS=auto (the per-call tile height at every
# length, so both forward kernels and the walks' sums run on every hd64 case with a block mask),
# four shards sharing one kernel cache; beside them, the paged_attention GPU tests on 8f8e046's
# plugin (a review refactor compiled but not run on a GPU last session). First, hd64 and hd128 at
# S2k/16k forward and backward on three masks, new against base (the block-state kernel serves the
# backward too).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call3; mkdir -p $O
run() {  # variant label, then env assignments
  local v=$1 label=$2; shift 2
  env "$@" ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 100 bin/attnrt_flex_bench $A --csv $O/flex_${label}.csv > $O/flex_${label}.txt 2>&1
  echo "$label rc=$?"
}
A="--hdim 64,128 --seqlen 2048,16384 --mods causal,document_mask,block_sparse_90 --backward 1 --reps 10"
run new short_new ATTNRT_PLUGIN_PATH=
run base short_base ATTNRT_PLUGIN_PATH=$PWD/variants/base
paste -d, <(cut -d, -f1,2,5,6 $O/flex_short_new.csv) <(cut -d, -f7 $O/flex_short_new.csv) <(cut -d, -f7 $O/flex_short_base.csv)
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3; do
  ATTNRT_FLEX_ROWS=auto ATTNRT_CACHE_DIR=/tmp/fc_tests GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i \
    timeout 330 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/flex_tests_$i.txt 2>&1 &
done
timeout 280 bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $O/paged_tests.txt 2>&1; echo "paged rc=$?"
wait
echo "== flex tests (auto): RUN $(cat $O/flex_tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/flex_tests_*.txt | grep -c '^\[       OK'), FAILED $(cat $O/flex_tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|^\[  PASSED\|Failure" $O/flex_tests_*.txt | head -20
tail -3 $O/paged_tests.txt
cd $O/.. && tar czf call3.tgz call3 && rm -rf call3
