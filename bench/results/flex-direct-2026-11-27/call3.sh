#!/usr/bin/env bash
# Issue 15, 2026-11-27 (third session), call 3: the final plugin (main 16eda10: the lists-direct
# forward of call 2 not kept; the cost model's block_steps; the per-call module memo).
# (1) The flex GPU tests, eight shards, the plugin's own rule, and the Python capture tests; at
# once, one-rep benches fill the kernel caches of `base` (d90e2c3's plugin, variants/base) and
# `new`. (2) The host's side, hd64 S2048, four mods, forward: base and new alternated, two rounds.
# (3) Prepare time of a call shape: hd64 and hd128 causal and ALiBi, forward and backward, on an
# emptied kernel cache (cold: NVRTC and nvJitLink), then again in a new process (warm: the disk
# cache).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . ../.gpu-py 2>/dev/null
O=${OUT:-/tmp/o}/call3; mkdir -p $O
trap 'cd $O/.. && tar czf call3.tgz call3 && rm -rf call3' EXIT
nvidia-smi -L > $O/gpu.txt
pp() { [ "$1" = base ] && echo ATTNRT_PLUGIN_PATH=$PWD/variants/base || echo ATTNRT_UNUSED=1; }
MODS=causal,document_mask,sliding_window_256,block_sparse_90
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=1 ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 400 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/tests_$i.txt 2>&1 &
done
(
  cd ../.gpu-py
  export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 ATTNRT_CACHE_DIR=/tmp/fc_py
  cd .. && timeout 300 python3 -m pytest -q -p no:cacheprovider tests/python/test_torch_flex_cuda.py \
    "tests/python/test_flex.py::test_cuda_matches_the_fp64_reference" > $O/pytest_flex_cuda.txt 2>&1
  echo "pytest rc=$?" >> $O/pytest_flex_cuda.txt
) &
for v in base new; do
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 300 bin/attnrt_flex_bench --hdim 64 --seqlen 2048 \
    --mods $MODS --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
echo "== tests: RUN $(cat $O/tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/tests_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/tests_*.txt | head -10
tail -3 $O/pytest_flex_cuda.txt
for r in 1 2; do
  for v in base new; do
    env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 60 bin/attnrt_flex_bench --hdim 64 --seqlen 2048 \
      --mods $MODS --backward 0 --reps 20 --csv $O/s2k_${v}_$r.csv > $O/s2k_${v}_$r.txt 2>&1
    echo "== $v round $r"; grep -h "^flex_attention\|causal_builtin" $O/s2k_${v}_$r.csv | cut -d, -f1,2,7,10 | sed 's/prepare [0-9.]* ms; //'
  done
done
for pass in cold warm; do
  for hd in 64 128; do
    ATTNRT_CACHE_DIR=/tmp/fc_prepare timeout 120 bin/attnrt_flex_bench --hdim $hd --seqlen 2048 --mods causal,alibi \
      --backward 1 --reps 1 --csv $O/prepare_${pass}_hd$hd.csv > $O/prepare_${pass}_hd$hd.txt 2>&1
    echo "== prepare $pass hd$hd: $(grep -h '^flex_attention,' $O/prepare_${pass}_hd$hd.csv | cut -d, -f2,10 | cut -d';' -f1 | tr '\n' ' ')"
  done
done
