#!/usr/bin/env bash
# Issue 15 on the committed kernels (the mask bits' loops fully unrolled): attnrt_flex_bench on
# the mods whose partial tiles call 2 sped up, then PyTorch's compiled flex on the same shapes
# (torch_flex_anchors.py --mods; flex_ratios.py), then every flex GPU test in three shards.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_walks3
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call3; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
A="--hdim 64,128 --seqlen 2048,16384 --mods causal,sliding_window_256,document_mask"
timeout 100 bin/attnrt_flex_bench $A --backward 1 --reps 10 --csv $O/flex.csv > $O/flex.txt 2>&1; echo "flex rc=$?"
timeout 150 python3 torch_flex_anchors.py $A --backward --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1; echo "torch rc=$?"
python3 flex_ratios.py $O/flex.csv $O/torch_flex.csv > $O/ratios.md 2>&1; grep -E "^\| [0-9]" $O/ratios.md | head -30
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2; do
  ATTNRT_CACHE_DIR=/tmp/attnrt_cache_flex_t$i GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i \
    timeout 280 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/flex_tests_$i.txt 2>&1 &
done
wait
echo "== flex tests: OK $(cat $O/flex_tests_*.txt | grep -c '^\[       OK'), FAILED $(cat $O/flex_tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|^\[  PASSED" $O/flex_tests_*.txt | head
cd $O/.. && tar czf call3.tgz call3 && rm -rf call3
