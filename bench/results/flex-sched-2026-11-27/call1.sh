#!/usr/bin/env bash
# Issue 15, 2026-11-27, call 1.
# (a) The flex GPU tests on main's plugin (9ee4a53: its last three commits compiled, never run on a
#     GPU) under ATTNRT_FLEX_ROWS=auto: both tile heights and the walks' sums on every hd64 case
#     with a block mask. Eight shards, own caches, two OpenMP threads each.
# (b) scheduler_warp.patch (`sched`, variants/sched: flex_attention_cuda, flash_attention_3 and
#     attention_sink, which share fa3_forward.cuh) against main (`main`): attnrt_flex_bench
#     forward hd64 and hd128, S8k/16k, the masks whose walks are short and two long ones,
#     alternated, two rounds.
# (c) ncu: flex's causal mask_mod against flash_attention_3's built-in causal, hd64 S2048, flex on
#     128 and on 192 rows (ATTNRT_FLEX_ROWS), main's plugins.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=2 ATTNRT_FLEX_ROWS=auto ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 300 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/flex_tests_$i.txt 2>&1 &
done
wait
echo "== flex tests (auto): RUN $(cat $O/flex_tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/flex_tests_*.txt | grep -c '^\[       OK'), FAILED $(cat $O/flex_tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/flex_tests_*.txt | head -20
A="--hdim 64,128 --seqlen 8192,16384 --mods causal,sliding_window_256,document_mask,dense,block_sparse_90 --backward 0 --reps 10"
for r in 1 2; do for v in sched main; do
  P=""; [ $v = sched ] && P=$PWD/variants/sched
  t=$([ $r = 1 ] && echo 120 || echo 60)
  ATTNRT_PLUGIN_PATH=$P ATTNRT_CACHE_DIR=/tmp/fc_$v timeout $t bin/attnrt_flex_bench $A --csv $O/flex_${v}_$r.csv > $O/flex_${v}_$r.txt 2>&1
  echo "$v $r rc=$?"
done; done
paste -d, <(cut -d, -f1,2,5,6 $O/flex_main_2.csv) <(cut -d, -f7 $O/flex_sched_1.csv) <(cut -d, -f7 $O/flex_sched_2.csv) <(cut -d, -f7 $O/flex_main_1.csv) <(cut -d, -f7 $O/flex_main_2.csv)
for rows in 128 192; do
  ATTNRT_FLEX_ROWS=$rows ATTNRT_CACHE_DIR=/tmp/fc_main timeout 90 ncu --clock-control none -k regex:'attnrt_flex_hopper_forward|fa3|forward_kernel' \
    --section SpeedOfLight --section WarpStateStats --section InstructionStats --section LaunchStats --section SchedulerStats \
    bin/attnrt_flex_bench --hdim 64 --seqlen 2048 --mods causal --backward 0 --reps 1 > $O/ncu_causal_s2k_$rows.txt 2>&1
  echo "ncu $rows rc=$?"
done
grep -E "^  [a-z_]|Duration|Executed Instructions  |Stall|Warp Cycles Per Issued" $O/ncu_causal_s2k_192.txt | head -60
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
