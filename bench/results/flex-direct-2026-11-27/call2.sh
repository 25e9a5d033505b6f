#!/usr/bin/env bash
# Issue 15, 2026-11-27 (third session), call 2: the Hopper forward reading the block mask's lists
# itself (no state kernel before it; the kernel that zeroes the counter runs beside its first
# tiles). (1) The flex GPU tests (eight shards, the plugin's own rule), with the new hand-written
# lists test, and the Python capture tests (test_torch_flex_cuda.py), on this tree's plugin; at
# once, a one-rep bench of both plugins fills their kernel caches. (2) Forward hd64, S2048/8192/
# 16384, four mods: `base` (main d90e2c3's plugin, variants/base) and `new`, alternated, two rounds.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . ../.gpu-py 2>/dev/null
O=${OUT:-/tmp/o}/call2; mkdir -p $O
trap 'cd $O/.. && tar czf call2.tgz call2 && rm -rf call2' EXIT
nvidia-smi -L > $O/gpu.txt
pp() { [ "$1" = base ] && echo ATTNRT_PLUGIN_PATH=$PWD/variants/base || echo ATTNRT_UNUSED=1; }
MODS=causal,document_mask,sliding_window_256,block_sparse_90
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=1 ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 420 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/tests_$i.txt 2>&1 &
done
(
  cd ../.gpu-py
  export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 ATTNRT_CACHE_DIR=/tmp/fc_py
  cd .. && timeout 400 python3 -m pytest -q -p no:cacheprovider tests/python/test_torch_flex_cuda.py \
    "tests/python/test_flex.py::test_cuda_matches_the_fp64_reference" > $O/pytest_flex_cuda.txt 2>&1
  echo "pytest rc=$?" >> $O/pytest_flex_cuda.txt
) &
for v in base new; do
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 400 bin/attnrt_flex_bench --hdim 64 --seqlen 2048,8192 \
    --mods $MODS --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
echo "== tests: RUN $(cat $O/tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/tests_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/tests_*.txt | head -10
grep -h "hand-written" $O/tests_*.txt | head -20
tail -3 $O/pytest_flex_cuda.txt
for r in 1 2; do
  for v in base new; do
    env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 200 bin/attnrt_flex_bench --hdim 64 --seqlen 2048,8192,16384 \
      --mods $MODS --backward 0 --reps 10 --csv $O/hd64_${v}_$r.csv > $O/hd64_${v}_$r.txt 2>&1
    echo "== $v round $r"; grep -h "^flex_attention\|causal_builtin" $O/hd64_${v}_$r.csv | cut -d, -f1,2,5,7,10 | sed 's/prepare [0-9.]* ms; //'
  done
done
