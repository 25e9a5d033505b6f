#!/usr/bin/env bash
# Issue 15, 2026-11-27, call 4: the committed change (the scheduling warp, claiming while at most 4
# published K/V blocks wait for the loading thread; .gpu's plugins, no variant).
# (a) the flex GPU tests under ATTNRT_FLEX_ROWS=auto, eight shards;
# (b) beside them, flash_attention_3's and sink's tests that cross the forward's load path (the
#     shared loads moved into one lambda: 2 of 6736 instructions of flash_attention_3's dynamic
#     kernels differ from main's): the edge grids, the paged cases (block_table loads), the
#     support refusals and sink's plugin tests, four shards.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call4; mkdir -p $O
trap 'cd $O/.. && tar czf call4.tgz call4 && rm -rf call4' EXIT
nvidia-smi -L > $O/gpu.txt
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
FA3='Edge/FlashAttention3.*bf16*:Cases/FlashAttention3Paged.*:FlashAttention3Support.*:Sink/SinkEdgeGrid.*:SinkPlugin.*'
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=1 ATTNRT_FLEX_ROWS=auto ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 420 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/flex_tests_$i.txt 2>&1 &
done
for i in 0 1 2 3; do
  OMP_NUM_THREADS=2 GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i \
    timeout 420 bin/attnrt_gpu_tests --gtest_filter="$FA3" > $O/fa3_tests_$i.txt 2>&1 &
done
wait
for t in flex fa3; do
  echo "== $t tests: RUN $(cat $O/${t}_tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/${t}_tests_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/${t}_tests_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/${t}_tests_*.txt | grep -c '^\[  FAILED  \]')"
  grep -h "^\[  FAILED  \]\|Failure" $O/${t}_tests_*.txt | head -20
done
