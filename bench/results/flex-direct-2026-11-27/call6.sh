#!/usr/bin/env bash
# Issue 15, 2026-11-27 (third session), call 6: main 95b9ec9 (the forward starts beside the
# block-state kernel: the scheduling warp waits, the first Q is issued early; the block-state
# kernel's rows loaded before their stores) against `base`, 16eda10's plugin (variants/base, the
# plugin of calls 4-5). (1) The flex GPU tests (eight shards, the plugin's own rule) and the Python
# capture tests; beside them flash_attention_3's and sink's tests that cross the forward's loads
# (fa3_forward.cuh's Q load moved into its own lambda), four shards; one-rep benches fill both
# plugins' kernel caches. (2) Forward, hd64 and hd128, S2048 and S8192, four mods: base and new
# alternated, two rounds.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . ../.gpu-py 2>/dev/null
O=${OUT:-/tmp/o}/call6; mkdir -p $O
trap 'cd $O/.. && tar czf call6.tgz call6 && rm -rf call6' EXIT
nvidia-smi -L > $O/gpu.txt
pp() { [ "$1" = base ] && echo ATTNRT_PLUGIN_PATH=$PWD/variants/base || echo ATTNRT_UNUSED=1; }
MODS=causal,document_mask,sliding_window_256,block_sparse_90
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
FA3='Edge/FlashAttention3.*bf16*:Cases/FlashAttention3Paged.*:FlashAttention3Support.*:Sink/SinkEdgeGrid.*:SinkPlugin.*'
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=1 ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 330 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/flex_tests_$i.txt 2>&1 &
done
for i in 0 1 2 3; do
  OMP_NUM_THREADS=1 GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i \
    timeout 330 bin/attnrt_gpu_tests --gtest_filter="$FA3" > $O/fa3_tests_$i.txt 2>&1 &
done
(
  cd ../.gpu-py
  export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 ATTNRT_CACHE_DIR=/tmp/fc_py
  cd .. && timeout 300 python3 -m pytest -q -p no:cacheprovider tests/python/test_torch_flex_cuda.py \
    "tests/python/test_flex.py::test_cuda_matches_the_fp64_reference" > $O/pytest_flex_cuda.txt 2>&1
  echo "pytest rc=$?" >> $O/pytest_flex_cuda.txt
) &
for v in base new; do
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 300 bin/attnrt_flex_bench --hdim 64,128 --seqlen 2048 \
    --mods $MODS --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
for t in flex fa3; do
  echo "== $t tests: RUN $(cat $O/${t}_tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/${t}_tests_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/${t}_tests_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/${t}_tests_*.txt | grep -c '^\[  FAILED  \]')"
  grep -h "^\[  FAILED  \]\|Failure" $O/${t}_tests_*.txt | head -10
done
tail -3 $O/pytest_flex_cuda.txt
for r in 1 2; do
  for v in base new; do
    env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 80 bin/attnrt_flex_bench --hdim 64,128 --seqlen 2048,8192 \
      --mods $MODS --backward 0 --reps 20 --csv $O/ab_${v}_$r.csv > $O/ab_${v}_$r.txt 2>&1
    echo "== $v round $r"; grep -h "^flex_attention\|causal_builtin" $O/ab_${v}_$r.csv | cut -d, -f1,2,5,6,7,10 | sed 's/prepare [0-9.]* ms; //'
  done
done
