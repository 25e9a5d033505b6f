#!/usr/bin/env bash
# Issue 15, 2026-11-27 (second session), call 7: the leading skips compiled for 192-row tiles only
# (call 5's l192 variant, now in fa3_forward.cuh), the rest as call 6. Correctness only: the flex
# GPU tests under ATTNRT_FLEX_ROWS=128 (every case on the 128-row kernels, now main's code path)
# and under the plugin's own rule, eight shards each, at once.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call7; mkdir -p $O
trap 'cd $O/.. && tar czf call7.tgz call7 && rm -rf call7' EXIT
nvidia-smi -L > $O/gpu.txt
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for rows in 128 default; do
  for i in 0 1 2 3 4 5 6 7; do
    r=$rows; [ $r = default ] && r=
    OMP_NUM_THREADS=1 ATTNRT_FLEX_ROWS=$r ATTNRT_CACHE_DIR=/tmp/fc_t${rows}_$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
      timeout 420 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/tests_${rows}_$i.txt 2>&1 &
  done
done
wait
for rows in 128 default; do
  echo "== tests ROWS=$rows: RUN $(cat $O/tests_${rows}_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_${rows}_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/tests_${rows}_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/tests_${rows}_*.txt | grep -c '^\[  FAILED  \]')"
  grep -h "^\[  FAILED  \]\|Failure" $O/tests_${rows}_*.txt | head -10
done
