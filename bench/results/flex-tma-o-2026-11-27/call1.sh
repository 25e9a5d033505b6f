#!/usr/bin/env bash
# Issue 15, 2026-11-27 (seventh session), call 1: the Hopper forward's O out by TMA stores (one
# thread of each consumer warpgroup issues them; the warpgroup goes on to its next tile) and
# softmax_scale / softcap by the fast division (no slow-path call at each CTA's start), in
# flash_attention_3's forward that flex_attention shares. `tmao` (variants/tmao, as lib/) against main's
# flash_attention_3 and flex_attention_cuda plugins (variants/main, first on ATTNRT_PLUGIN_PATH):
# forward, hd64 and hd128, S2048 and S8192, five mods and flash_attention_3's causal in the same
# processes, three rounds alternated. Then the GPU tests of every kernel on that forward
# (flex, flash_attention_3 edge and paged cases; TESTS overrides) on tmao in eight shards, and compute-sanitizer
# memcheck on a few.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call1; mkdir -p $O
trap 'cd $O/.. && tar czf call1.tgz call1 && rm -rf call1' EXIT
nvidia-smi -L > $O/gpu.txt
MODS=causal,dense,block_sparse_90,sliding_window_256,document_mask
path() { echo $PWD/variants/$1; }
for v in main tmao; do
  ATTNRT_PLUGIN_PATH=$(path $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 250 bin/attnrt_flex_bench --hdim 64,128 \
    --seqlen 2048 --mods $MODS --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
echo "warm done $SECONDS s"; grep -il "error\|fail" $O/warm_* | head
for r in 1 2 3; do
  for hd in 64 128; do
    for v in main tmao; do
      ATTNRT_PLUGIN_PATH=$(path $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 100 bin/attnrt_flex_bench --hdim $hd \
        --seqlen 2048,8192 --mods $MODS --backward 0 --reps 20 --csv $O/${v}_hd${hd}_$r.csv > $O/${v}_hd${hd}_$r.txt 2>&1
    done
  done
  echo "== round $r ($SECONDS s)"
done
T=../bench/results/flex-lists-2026-11-27/table.py
python3 $T $O 2048 2>/dev/null || true
python3 $T $O 8192 2>/dev/null || true
TESTS="${TESTS:-Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*:Edge/FlashAttention3.*:Cases/FlashAttention3Paged.*}"
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=2 ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 240 bin/attnrt_gpu_tests --gtest_filter="$TESTS" > $O/tests_$i.txt 2>&1 &
done
wait
echo "== tests ($SECONDS s): RUN $(cat $O/tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/tests_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/tests_*.txt | head -10
SAN="${SAN:-}"
if [ -n "$SAN" ]; then
  ATTNRT_CACHE_DIR=/tmp/fc_san timeout 150 compute-sanitizer --tool memcheck --error-exitcode 7 bin/attnrt_gpu_tests \
    --gtest_filter="$SAN" > $O/memcheck.txt 2>&1
  echo "memcheck exit $? ($SECONDS s): $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $O/memcheck.txt | tr '\n' ' ')"
fi
