#!/usr/bin/env bash
# Issue 15, 2026-11-27, call 7: the Hopper forward launched as a programmatic dependent of the
# block-state kernel (`pdl`, variants/pdl/flex_attention_cuda: the forward's CTAs start while the
# block-state kernel runs and wait for it with griddepcontrol.wait; that kernel lets them start
# with griddepcontrol.launch_dependents) against main (c505851). attnrt_flex_bench forward,
# hd64 and hd128 at S2048 (every mod) and hd64 at S16384 (four masks), alternated, two rounds;
# then the flex GPU tests on `pdl` under ATTNRT_FLEX_ROWS=auto.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call7; mkdir -p $O
trap 'cd $O/.. && tar czf call7.tgz call7 && rm -rf call7' EXIT
nvidia-smi -L > $O/gpu.txt
A="--hdim 64,128 --seqlen 2048 --mods causal,sliding_window_256,prefix_lm,document_mask,alibi,softcap,dense,block_sparse_90 --backward 0 --reps 20"
B="--hdim 64 --seqlen 16384 --mods causal,sliding_window_256,document_mask,block_sparse_90 --backward 0 --reps 10"
for r in 1 2; do for v in pdl main; do
  P=""; [ $v != main ] && P=$PWD/variants/$v
  t=$([ $r = 1 ] && echo 100 || echo 50)
  ATTNRT_PLUGIN_PATH=$P ATTNRT_CACHE_DIR=/tmp/fc_$v timeout $t bin/attnrt_flex_bench $A --csv $O/flex_${v}_$r.csv > $O/flex_${v}_$r.txt 2>&1
  echo "$v $r S2k rc=$?"
  ATTNRT_PLUGIN_PATH=$P ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 60 bin/attnrt_flex_bench $B --csv $O/flex16k_${v}_$r.csv > $O/flex16k_${v}_$r.txt 2>&1
  echo "$v $r S16k rc=$?"
done; done
echo "mod,S,hd,pdl_1,pdl_2,main_1,main_2"
for f in flex flex16k; do
  paste -d, <(cut -d, -f2,5,6 $O/${f}_main_2.csv) <(cut -d, -f7 $O/${f}_pdl_1.csv) <(cut -d, -f7 $O/${f}_pdl_2.csv) <(cut -d, -f7 $O/${f}_main_1.csv) <(cut -d, -f7 $O/${f}_main_2.csv)
done
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3 4 5 6 7; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/pdl OMP_NUM_THREADS=2 ATTNRT_FLEX_ROWS=auto ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 240 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/flex_tests_$i.txt 2>&1 &
done
wait
echo "== flex tests (pdl, auto): RUN $(cat $O/flex_tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/flex_tests_*.txt | grep -c '^\[       OK'), FAILED $(cat $O/flex_tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/flex_tests_*.txt | head -20
