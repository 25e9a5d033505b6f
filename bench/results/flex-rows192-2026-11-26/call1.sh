#!/usr/bin/env bash
# Issue 15: flex_attention's Hopper forward at head_dim 64 on 192-row tiles (three consumer
# warpgroups, as flash_attention_3 takes there; `r192`) against main's 128 (`base`), now that
# shared storage is addressed as shared memory (ce58b4a) and the partial tiles' mask bits are
# unrolled (7e0f2de): 52/60 bytes of spills a thread at 192 rows on a causal mask_mod (ptxas).
# Forward only, hd64, S 2k/8k/16k, every mod of the bench; two alternated rounds; then PyTorch's
# compiled flex on the same shapes, and the flex GPU tests on r192.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
A="--hdim 64 --seqlen 2048,8192,16384 --mods causal,sliding_window_256,prefix_lm,document_mask,alibi,softcap,dense,block_sparse_90"
for r in 1 2; do for v in base r192; do
  t=$([ $r = 1 ] && echo 150 || echo 80)
  ATTNRT_CACHE_DIR=/tmp/flexcache_$v ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout $t bin/attnrt_flex_bench $A --backward 0 --reps 10 --csv $O/flex_${v}_$r.csv > $O/flex_${v}_$r.txt 2>&1
  echo "$v $r rc=$?"
done; done
for v in base r192; do echo "== $v"; paste -d, <(cut -d, -f1,2,5,7 $O/flex_${v}_1.csv) <(cut -d, -f7 $O/flex_${v}_2.csv) | head -40; done
timeout 200 python3 torch_flex_anchors.py $A --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1; echo "torch rc=$?"
for v in base r192; do python3 flex_ratios.py $O/flex_${v}_2.csv $O/torch_flex.csv > $O/ratios_${v}_2.md 2>&1; echo "== ratios $v"; grep -E "^\| [0-9]" $O/ratios_${v}_2.md | head -40; done
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/r192 ATTNRT_CACHE_DIR=/tmp/attnrt_cache_flex_t$i GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i \
    timeout 200 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/flex_tests_$i.txt 2>&1 &
done
wait
echo "== flex tests: OK $(cat $O/flex_tests_*.txt | grep -c '^\[       OK'), FAILED $(cat $O/flex_tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|^\[  PASSED" $O/flex_tests_*.txt | head
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
