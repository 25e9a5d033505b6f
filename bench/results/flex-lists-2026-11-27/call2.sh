#!/usr/bin/env bash
# Issue 15, 2026-11-27 (sixth session), call 2: call 1's lists variant slowed every mod, dense
# (no block mask, no lists read) included. lists2: the scheduling warp waits for the kernel before
# once, at its first claim (call 1: at every claim), and loads a row's count and first 32 entries
# together (call 1: the count, then the entries). entry: lists2 with the whole CTA waiting at the
# kernel's entry, as main. Forward, hd64 and hd128, S2048 and S8192, five mods, three rounds
# alternated; then the forward and block-mask GPU tests on lists2 (lib/), and the backward test
# that call 1's shard 3 did not finish in its 300 s.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call2; mkdir -p $O
trap 'cd $O/.. && tar czf call2.tgz call2 && rm -rf call2' EXIT
nvidia-smi -L > $O/gpu.txt
VARS="main lists2 entry"
MODS=causal,dense,block_sparse_90,sliding_window_256,document_mask
for v in $VARS; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 250 bin/attnrt_flex_bench --hdim 64,128 \
    --seqlen 2048 --mods $MODS --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
echo "warm done $SECONDS s"; grep -il "error\|fail" $O/warm_* | head
for r in 1 2 3; do
  for hd in 64 128; do
    for v in $VARS; do
      ATTNRT_PLUGIN_PATH=$PWD/variants/$v ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 100 bin/attnrt_flex_bench --hdim $hd \
        --seqlen 2048,8192 --mods $MODS --backward 0 --reps 20 --csv $O/${v}_hd${hd}_$r.csv > $O/${v}_hd${hd}_$r.txt 2>&1
    done
  done
  echo "== round $r ($SECONDS s)"
done
python3 ../bench/results/flex-lists-2026-11-27/table.py $O 2048 2>/dev/null || true
python3 ../bench/results/flex-lists-2026-11-27/table.py $O 8192 2>/dev/null || true
FLEX='Mods/FlexGpu.Forward*:FlexGpuRefusals.*:FlexGpuBlockMask.*:Mods/FlexGpu.BackwardWithinTwiceTheCpuPluginsError/fp16_hd128_block_causal_window_1k'
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=2 ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 230 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/tests_$i.txt 2>&1 &
done
wait
echo "== tests ($SECONDS s): RUN $(cat $O/tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/tests_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/tests_*.txt | head -10
