#!/usr/bin/env bash
# Issue 15, 2026-11-27 (seventh session), call 5: the GPU tests of every kernel on the Hopper
# forward, on the build that is committed (call 1's tmao: O out by TMA stores, softmax_scale /
# softcap by the fast division): flash_attention_3 (edge, random, hd96/hd192, paged,
# deterministic, support), sink, paged_attention, flash_attention_2's grid (which shares the score
# policy) and every flex_attention case, in eight shards; then compute-sanitizer memcheck on three
# cases (O by TMA with a softcap and a partial last tile; a packed varlen call, whose O the
# threads store; a flex forward) and racecheck on flash_attention_3's kernels for the first.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call5; mkdir -p $O
trap 'cd $O/.. && tar czf call5.tgz call5 && rm -rf call5' EXIT
nvidia-smi -L > $O/gpu.txt
ALL='*FlashAttention3*:*Sink*:*Paged*:Grid/FlashAttention2Grid.*:Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=2 ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 400 bin/attnrt_gpu_tests --gtest_filter="$ALL" > $O/tests_$i.txt 2>&1 &
done
wait
echo "== tests ($SECONDS s): RUN $(cat $O/tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/tests_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/tests_*.txt | head -10
for f in $O/tests_*.txt; do awk '/^\[ RUN/{r=$4} /^\[       OK|^\[  FAILED|^\[  SKIPPED/{r=""} END{if(r!="") print "unfinished: "r}' $f; done
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
TMA='Edge/FlashAttention3.MatchesEagerRule/bf16_hd64_softcap_causal_200x250'
CASES="$TMA:Edge/FlashAttention3.MatchesEagerRule/bf16_hd64_persistent_varlen_window:Mods/FlexGpu.ForwardWithinTwiceTheCpuPluginsError/bf16_hd128_prefix_lm"
ATTNRT_CACHE_DIR=/tmp/fc_san timeout 120 $SAN --tool memcheck --error-exitcode 7 bin/attnrt_gpu_tests --gtest_filter="$CASES" > $O/memcheck.txt 2>&1
echo "memcheck rc=$? ($SECONDS s): $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $O/memcheck.txt | tr '\n' ' ')"
timeout 60 $SAN --tool racecheck --kernel-regex kns=fa3 --error-exitcode 7 bin/attnrt_gpu_tests --gtest_filter="$TMA" > $O/racecheck.txt 2>&1
echo "racecheck rc=$? ($SECONDS s): $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED' $O/racecheck.txt | tr '\n' ' ')"
