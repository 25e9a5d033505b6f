#!/usr/bin/env bash
# Issue 15, 2026-11-27 (second session), call 3: call 2's plugin plus the choice remembered per
# block mask (rows_choice.hpp: the first call's sums copied back; later calls with the same block
# mask launch the chosen kernel alone); .gpu's plugins, variants/base main's (4812895).
# (a) the flex GPU tests under ATTNRT_FLEX_ROWS=auto (the choice at every length), eight shards,
#     among them the new test of the remembered choice (which unsets the variable), with one
#     warm-up bench run per variant beside them (compiles into its own cache);
# (b) the same round as call 2: main with the plugin's default rows, the change with the default
#     and forced to 128 and to 192 rows, hd64, with flash_attention_3's causal in each run.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call3; mkdir -p $O
trap 'cd $O/.. && tar czf call3.tgz call3 && rm -rf call3' EXIT
nvidia-smi -L > $O/gpu.txt
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=1 ATTNRT_FLEX_ROWS=auto ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 330 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/tests_auto_$i.txt 2>&1 &
done
A="--hdim 64 --mods causal,document_mask,sliding_window_256,block_sparse_90"
# main's plugin first on the search path for "base"; .gpu's own for "new"
pp() { [ "$1" = base ] && echo "ATTNRT_PLUGIN_PATH=$PWD/variants/base" || echo "ATTNRT_UNUSED=1"; }
for v in base new; do
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v ATTNRT_FLEX_ROWS=auto \
    timeout 300 bin/attnrt_flex_bench $A --seqlen 2048 --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
echo "== tests ROWS=auto: RUN $(cat $O/tests_auto_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_auto_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/tests_auto_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/tests_auto_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/tests_auto_*.txt | head -10
grep -h "Remembered\|remembered" $O/tests_auto_*.txt
for run in base_default new_default new_128 new_192; do
  v=${run%%_*}; rows=${run#*_}; [ $rows = default ] && rows=
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v ATTNRT_FLEX_ROWS=$rows \
    timeout 70 bin/attnrt_flex_bench $A --seqlen 2048,8192,16384 --backward 0 --reps 10 --csv $O/r1_$run.csv > $O/r1_$run.txt 2>&1
  echo "$run rc=$?"
done
echo "== backend/mod/S: base_default new_default new_128 new_192 (ms; flex: then pipelined)"
join -t, <(join -t, <(awk -F, 'NR>1{print $1"/"$2"/"$5","$7}' $O/r1_base_default.csv | sort) \
                    <(awk -F, 'NR>1{print $1"/"$2"/"$5","$7}' $O/r1_new_default.csv | sort)) \
         <(join -t, <(awk -F, 'NR>1{print $1"/"$2"/"$5","$7}' $O/r1_new_128.csv | sort) \
                    <(awk -F, 'NR>1{print $1"/"$2"/"$5","$7}' $O/r1_new_192.csv | sort))
for run in base_default new_default new_128 new_192; do
  echo "$run pipelined: $(grep -o 'pipelined [0-9.]*' $O/r1_$run.csv | awk '{printf "%s ", $2}')"
done
