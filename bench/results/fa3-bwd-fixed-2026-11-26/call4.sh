#!/usr/bin/env bash
# Issues 13 and 15: correctness of call 3's kernels (shared storage as shared memory, dQ accumulator
# zeroed by the D kernel), in eight gtest shards at once (five over flash_attention_3's, sink's and
# flash_attention_2's cases: edge, 400 random, hd96/hd192 random, paged, deterministic, support,
# sink grids, flash_attention_2's grid; three over every flex_attention GPU case); then
# compute-sanitizer synccheck and racecheck on flash_attention_3's kernels and memcheck on every
# kernel of the same cases (a varlen and a windowed case, forward and backward).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call4; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
FA3='Edge/FlashAttention3.*:Random/FlashAttention3.*:RandomHd96Hd192/FlashAttention3.*:Cases/FlashAttention3Paged.*:Cases/FlashAttention3Deterministic.*:FlashAttention3Support.*:Sink/SinkGrid.*:SinkRandom/SinkGrid.*:Sink/SinkEdgeGrid.*:SinkPlugin.*:Grid/FlashAttention2Grid.*'
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3 4; do
  GTEST_TOTAL_SHARDS=5 GTEST_SHARD_INDEX=$i timeout 320 bin/attnrt_gpu_tests --gtest_filter="$FA3" > $O/fa3_$i.txt 2>&1 &
done
for i in 0 1 2; do
  ATTNRT_CACHE_DIR=/tmp/attnrt_cache_flex$i GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i \
    timeout 320 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/flex_$i.txt 2>&1 &
done
wait
for g in fa3 flex; do
  echo "== $g: OK $(cat $O/${g}_*.txt | grep -c '^\[       OK'), FAILED $(cat $O/${g}_*.txt | grep -c '^\[  FAILED  \]')"
  grep -h "^\[  FAILED  \]\|tests ran\|^\[  PASSED" $O/${g}_*.txt | head -12
done
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
CASES=$(bin/attnrt_gpu_tests --gtest_list_tests --gtest_filter='Edge/FlashAttention3.*' 2>/dev/null | grep -E "varlen|window" | head -2 | awk '{print "Edge/FlashAttention3.MatchesEagerRule/"$1}' | tr '\n' ':')
echo "sanitizer cases: $CASES"
for tool in synccheck racecheck memcheck; do
  regex="--kernel-regex kns=fa3"; [ $tool = memcheck ] && regex=""
  timeout 75 $SAN --tool $tool $regex bin/attnrt_gpu_tests --gtest_filter="$CASES" > $O/sanitizer_$tool.txt 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $O/sanitizer_$tool.txt | head -4
done
cd $O/.. && tar czf call4.tgz call4 && rm -rf call4
