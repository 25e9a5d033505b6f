#!/usr/bin/env bash
# Issue 15, 2026-11-27 (second session), call 1: the block-sparse forward passes over each consumer
# warpgroup's leading run of skipped walk entries (fa3_forward.cuh `lead`), as flash_attention_3's
# causal forward does with `skip`; .gpu's plugins are the change, variants/base main's (4812895).
# (a) the flex GPU tests, eight shards under ATTNRT_FLEX_ROWS=auto and eight under 192 (where
#     warpgroups' states differ within a tile, so `lead` is not 0), at once; among them the
#     many-tiles test added last session and never run (it sets ATTNRT_FLEX_ROWS itself);
# (b) beside the tests, one warm-up bench run per variant (compiles into its own cache);
# (c) then main against the change, under ATTNRT_FLEX_ROWS=auto and 192, hd64, with
#     flash_attention_3's causal in each run.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
trap 'cd $O/.. && tar czf call1.tgz call1 && rm -rf call1' EXIT
nvidia-smi -L > $O/gpu.txt
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for rows in auto 192; do
  for i in 0 1 2 3 4 5 6 7; do
    OMP_NUM_THREADS=1 ATTNRT_FLEX_ROWS=$rows ATTNRT_CACHE_DIR=/tmp/fc_t${rows}_$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
      timeout 380 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/tests_${rows}_$i.txt 2>&1 &
  done
done
A="--hdim 64 --mods causal,document_mask,sliding_window_256,block_sparse_90"
# main's plugin first on the search path for "base"; .gpu's own for "new"
pp() { [ "$1" = base ] && echo "ATTNRT_PLUGIN_PATH=$PWD/variants/base" || echo "ATTNRT_UNUSED=1"; }
for v in base new; do
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v ATTNRT_FLEX_ROWS=auto \
    timeout 300 bin/attnrt_flex_bench $A --seqlen 2048 --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
for rows in auto 192; do
  echo "== tests ROWS=$rows: RUN $(cat $O/tests_${rows}_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_${rows}_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/tests_${rows}_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/tests_${rows}_*.txt | grep -c '^\[  FAILED  \]')"
  grep -h "^\[  FAILED  \]\|Failure" $O/tests_${rows}_*.txt | head -10
done
grep -h "ManyTiles" $O/tests_auto_*.txt
for v in base new; do for rows in auto 192; do
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v ATTNRT_FLEX_ROWS=$rows \
    timeout 60 bin/attnrt_flex_bench $A --seqlen 2048,8192,16384 --backward 0 --reps 10 --csv $O/ab_${v}_${rows}.csv > $O/ab_${v}_${rows}.txt 2>&1
  echo "$v $rows rc=$?"
done; done
for rows in auto 192; do
  echo "== ROWS=$rows: mod S base new (ms)"
  join -t, -j1 <(awk -F, 'NR>1{print $1"/"$2"/"$5","$7}' $O/ab_base_${rows}.csv | sort) \
               <(awk -F, 'NR>1{print $1"/"$2"/"$5","$7}' $O/ab_new_${rows}.csv | sort)
done
