#!/usr/bin/env bash
# Issue 15: the per-call choice of the forward's tile height at head_dim 64 (the plugin with both
# variants: from 4096 query rows, 192 rows without a block mask, and with one both kernels launched
# after attnrt_flex_tile_walks, the one with the cheaper walks running). attnrt_flex_bench at hd64,
# S 8k and 16k, forward, the default against ATTNRT_FLEX_ROWS=128 (main's tiles), alternated; then
# the flex GPU tests with ATTNRT_FLEX_ROWS=auto (the choice at every length).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/flexcache_choice
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call2; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
A="--hdim 64 --seqlen 8192,16384 --mods causal,sliding_window_256,prefix_lm,document_mask,alibi,softcap,dense,block_sparse_90 --backward 0 --reps 10"
timeout 150 bin/attnrt_flex_bench $A --csv $O/flex_choice_1.csv > $O/flex_choice_1.txt 2>&1; echo "choice 1 rc=$?"
ATTNRT_FLEX_ROWS=128 timeout 80 bin/attnrt_flex_bench $A --csv $O/flex_128_1.csv > $O/flex_128_1.txt 2>&1; echo "128 1 rc=$?"
ATTNRT_FLEX_ROWS=128 timeout 80 bin/attnrt_flex_bench $A --csv $O/flex_128_2.csv > $O/flex_128_2.txt 2>&1; echo "128 2 rc=$?"
timeout 80 bin/attnrt_flex_bench $A --csv $O/flex_choice_2.csv > $O/flex_choice_2.txt 2>&1; echo "choice 2 rc=$?"
paste -d, <(cut -d, -f1,2,5,7 $O/flex_choice_1.csv) <(cut -d, -f7 $O/flex_choice_2.csv) <(cut -d, -f7 $O/flex_128_1.csv) <(cut -d, -f7 $O/flex_128_2.csv)
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3; do
  ATTNRT_FLEX_ROWS=auto ATTNRT_CACHE_DIR=/tmp/attnrt_cache_flex_t$i GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i \
    timeout 230 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/flex_tests_$i.txt 2>&1 &
done
wait
echo "== flex tests (auto): RUN $(cat $O/flex_tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/flex_tests_*.txt | grep -c '^\[       OK'), FAILED $(cat $O/flex_tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|^\[  PASSED\|Failure" $O/flex_tests_*.txt | head
cd $O/.. && tar czf call2.tgz call2 && rm -rf call2
