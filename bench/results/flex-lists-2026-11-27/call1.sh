#!/usr/bin/env bash
# Issue 15, 2026-11-27 (sixth session), call 1: the Hopper forward reading the block mask's lists
# itself (no per-block states before it; the kernel before it only zeroes the tile counter, and
# only the scheduling warp's claims wait for it). (1) The flex GPU tests on it, eight shards.
# (2) main's plugin (variants/main) against it (lib/), forward, hd64 and hd128, S2048 and S8192,
# five mods, three rounds alternated.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call1; mkdir -p $O
trap 'cd $O/.. && tar czf call1.tgz call1 && rm -rf call1' EXIT
nvidia-smi -L > $O/gpu.txt
mkdir -p variants/lists && cp -a lib/attnrt/plugins/flex_attention_cuda variants/lists/ && chmod -R go-w variants
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=1 ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 300 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/tests_$i.txt 2>&1 &
done
VARS="main lists"
MODS=causal,dense,block_sparse_90,sliding_window_256,document_mask
for v in $VARS; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 250 bin/attnrt_flex_bench --hdim 64,128 \
    --seqlen 2048 --mods $MODS --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
echo "== tests ($SECONDS s): RUN $(cat $O/tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/tests_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/tests_*.txt | head -10
grep -il "error\|fail" $O/warm_* | head
for r in 1 2 3; do
  for hd in 64 128; do
    for v in $VARS; do
      ATTNRT_PLUGIN_PATH=$PWD/variants/$v ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 100 bin/attnrt_flex_bench --hdim $hd \
        --seqlen 2048,8192 --mods $MODS --backward 0 --reps 20 --csv $O/${v}_hd${hd}_$r.csv > $O/${v}_hd${hd}_$r.txt 2>&1
      echo "== $v hd$hd round $r ($SECONDS s)"
    done
  done
done
python3 ../bench/results/flex-lists-2026-11-27/table.py $O 2048 2>/dev/null || true
