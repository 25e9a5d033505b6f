#!/usr/bin/env bash
# Issue 15, 2026-11-27 (eighth session), call 4: after the review, `rev` (lib/: the state rows'
# index in one helper shared by block_state and tile_states, and the forward's O map formed with
# the other maps) against call 2's `br` (0ccdb85). Forward, hd64 and hd128, S2048 and S8192, two
# rounds alternated; then the flex GPU tests on rev in eight shards.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call4; mkdir -p $O
trap 'cd $O/.. && tar czf call4.tgz call4 && rm -rf call4' EXIT
nvidia-smi -L > $O/gpu.txt
VARS="br rev"
MODS=causal,dense,block_sparse_90,sliding_window_256,document_mask
path() { echo $PWD/variants/$1; }
for v in $VARS; do
  ATTNRT_PLUGIN_PATH=$(path $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 250 bin/attnrt_flex_bench --hdim 64,128 \
    --seqlen 2048 --mods $MODS --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
echo "warm done $SECONDS s"; grep -il "error\|fail" $O/warm_* | head
for r in 1 2; do
  for hd in 64 128; do
    for v in $VARS; do
      ATTNRT_PLUGIN_PATH=$(path $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 100 bin/attnrt_flex_bench --hdim $hd \
        --seqlen 2048,8192 --mods $MODS --backward 0 --reps 20 --csv $O/${v}_hd${hd}_$r.csv > $O/${v}_hd${hd}_$r.txt 2>&1
    done
  done
  echo "== round $r ($SECONDS s)"
done
T=../bench/results/flex-lists-2026-11-27/table.py
python3 $T $O 2048 2>/dev/null || true
python3 $T $O 8192 2>/dev/null || true
for v in $VARS; do python3 ../bench/results/flex-tma-o-2026-11-27/ratios.py $O $v 2>/dev/null; done
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=2 ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 240 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/tests_$i.txt 2>&1 &
done
wait
echo "== tests ($SECONDS s): RUN $(cat $O/tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_*.txt | grep -c '^\[       OK'), FAILED $(cat $O/tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/tests_*.txt | head -10
