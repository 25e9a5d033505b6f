#!/usr/bin/env bash
# Issue 15, 2026-11-27, call 3. Call 2's a4/a12 spilled in the producer at hd128 (ptxas 52/80
# bytes; the patch alone had none): the published count now lives in shared memory, and ptxas
# shows 0 spills at 128 rows (hd64, hd128) again. Same A/B as call 2 (a4, a12, main), then the
# flex GPU tests on a12 under ATTNRT_FLEX_ROWS=auto (every hd64 case with a block mask runs both
# tile heights), eight shards.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call3; mkdir -p $O
trap 'cd $O/.. && tar czf call3.tgz call3 && rm -rf call3' EXIT
nvidia-smi -L > $O/gpu.txt
A="--hdim 64,128 --seqlen 8192,16384 --mods causal,sliding_window_256,document_mask,block_sparse_90 --backward 0 --reps 10"
for r in 1 2; do for v in a4 a12 main; do
  P=""; [ $v != main ] && P=$PWD/variants/$v
  t=$([ $r = 1 ] && echo 150 || echo 50)
  ATTNRT_PLUGIN_PATH=$P ATTNRT_CACHE_DIR=/tmp/fc_$v timeout $t bin/attnrt_flex_bench $A --csv $O/flex_${v}_$r.csv > $O/flex_${v}_$r.txt 2>&1
  echo "$v $r rc=$?"
done; done
echo "mod,S,hd,a4_1,a4_2,a12_1,a12_2,main_1,main_2"
paste -d, <(cut -d, -f2,5,6 $O/flex_main_2.csv) <(cut -d, -f7 $O/flex_a4_1.csv) <(cut -d, -f7 $O/flex_a4_2.csv) <(cut -d, -f7 $O/flex_a12_1.csv) <(cut -d, -f7 $O/flex_a12_2.csv) <(cut -d, -f7 $O/flex_main_1.csv) <(cut -d, -f7 $O/flex_main_2.csv)
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3 4 5 6 7; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/a12 OMP_NUM_THREADS=2 ATTNRT_FLEX_ROWS=auto ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 240 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/flex_tests_$i.txt 2>&1 &
done
wait
echo "== flex tests (a12, auto): RUN $(cat $O/flex_tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/flex_tests_*.txt | grep -c '^\[       OK'), FAILED $(cat $O/flex_tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/flex_tests_*.txt | head -20
