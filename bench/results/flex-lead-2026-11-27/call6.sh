#!/usr/bin/env bash
# Issue 15, 2026-11-27 (second session), call 6: the final state. The choice of tile height at
# head_dim 64 now runs for a block mask at every length (made once per mods and block mask), with
# the tile cost refitted to calls 2-3 (ATTNRT_FLEX_TILE_COST 180); .gpu's plugins, variants/base
# main's before this session (4812895).
# (a) the flex GPU tests under the plugin's own rule (ATTNRT_FLEX_ROWS unset: the choice and its
#     memory run for every block-mask case at hd64), twelve shards, with warm-up bench runs;
# (b) hd64, default rows: the change, main; the change forced to 128 and 192 rows at S2048; then
#     PyTorch's compiled flex with the same arguments, and the ratios.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call6; mkdir -p $O
trap 'cd $O/.. && tar czf call6.tgz call6 && rm -rf call6' EXIT
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
unset ATTNRT_FLEX_ROWS
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3 4 5 6 7 8 9 10 11; do
  OMP_NUM_THREADS=1 ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i \
    timeout 280 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/tests_$i.txt 2>&1 &
done
M="--mods causal,document_mask,sliding_window_256,block_sparse_90"
pp() { [ "$1" = base ] && echo "ATTNRT_PLUGIN_PATH=$PWD/variants/base" || echo "ATTNRT_UNUSED=1"; }
for v in base new; do
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v ATTNRT_FLEX_ROWS=auto \
    timeout 280 bin/attnrt_flex_bench --hdim 64 $M --seqlen 2048 --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
echo "== tests: RUN $(cat $O/tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/tests_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/tests_*.txt | head -10
A="--hdim 64 --seqlen 2048,8192,16384 $M"
for run in new base; do
  env $(pp $run) ATTNRT_CACHE_DIR=/tmp/fc_$run timeout 60 bin/attnrt_flex_bench $A --backward 0 --reps 10 \
    --csv $O/hd64_$run.csv > $O/hd64_$run.txt 2>&1
  echo "hd64 $run rc=$?"
done
for rows in 128 192; do
  ATTNRT_FLEX_ROWS=$rows ATTNRT_CACHE_DIR=/tmp/fc_new timeout 30 bin/attnrt_flex_bench --hdim 64 --seqlen 2048 $M \
    --backward 0 --reps 10 --csv $O/s2k_new_$rows.csv > $O/s2k_new_$rows.txt 2>&1
  echo "s2k $rows rc=$?"
done
timeout 150 python3 torch_flex_anchors.py $A --csv $O/torch_hd64.csv > $O/torch_hd64.txt 2>&1; echo "torch rc=$?"
for run in new base; do python3 flex_ratios.py $O/hd64_$run.csv $O/torch_hd64.csv > $O/ratios_hd64_$run.md 2>&1; done
echo "== hd64: S hd mod | new ms | torch ms | ratio || base ms | ratio"
paste -d'|' <(grep -E "^\| [0-9]" $O/ratios_hd64_new.md | cut -d'|' -f2,3,4,6,7,10) \
  <(grep -E "^\| [0-9]" $O/ratios_hd64_base.md | cut -d'|' -f6,10)
grep -A8 "built-in causal" $O/ratios_hd64_new.md
echo "== S2048 forced (ms): 128 | 192"
join -t, <(awk -F, 'NR>1{print $1"/"$2,$7}' OFS=, $O/s2k_new_128.csv | sort) <(awk -F, 'NR>1{print $1"/"$2,$7}' OFS=, $O/s2k_new_192.csv | sort)
