#!/usr/bin/env bash
# Issue 15, 2026-11-27 (second session), call 4: the committed state (the leading skips, the
# tile-cost choice, the choice remembered per mods and block mask and checked every 64 calls);
# .gpu's plugins, variants/base main's before this session (4812895).
# (a) the remembered-choice and many-tiles tests, with warm-up bench runs (both variants, hd64
#     and hd128) beside them;
# (b) hd64, the plugin's default rows: the change, main, the change again; then PyTorch's
#     compiled flex with the same arguments (forward), and the ratios;
# (c) hd128 at 8k and 16k: main and the change (the leading skips only: 128-row tiles).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call4; mkdir -p $O
trap 'cd $O/.. && tar czf call4.tgz call4 && rm -rf call4' EXIT
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
OMP_NUM_THREADS=2 ATTNRT_CACHE_DIR=/tmp/fc_t timeout 300 bin/attnrt_gpu_tests \
  --gtest_filter='FlexGpuBlockMask.TheRemembered*:FlexGpuBlockMask.HopperForwardWithManyTiles*' > $O/tests.txt 2>&1 &
M="--mods causal,document_mask,sliding_window_256,block_sparse_90"
pp() { [ "$1" = base ] && echo "ATTNRT_PLUGIN_PATH=$PWD/variants/base" || echo "ATTNRT_UNUSED=1"; }
for v in base new; do
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v ATTNRT_FLEX_ROWS=auto \
    timeout 300 bin/attnrt_flex_bench --hdim 64,128 $M --seqlen 2048 --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
grep -h "^\[       OK\|^\[  FAILED\|Failure\|errors \]" $O/tests.txt
A="--hdim 64 --seqlen 2048,8192,16384 $M"
for run in new_1 base_1 new_2; do
  v=${run%%_*}
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 80 bin/attnrt_flex_bench $A --backward 0 --reps 10 \
    --csv $O/hd64_$run.csv > $O/hd64_$run.txt 2>&1
  echo "hd64 $run rc=$?"
done
timeout 240 python3 torch_flex_anchors.py $A --csv $O/torch_hd64.csv > $O/torch_hd64.txt 2>&1; echo "torch rc=$?"
for run in new_1 base_1 new_2; do python3 flex_ratios.py $O/hd64_$run.csv $O/torch_hd64.csv > $O/ratios_hd64_$run.md 2>&1; done
for run in base_1 new_1; do
  v=${run%%_*}
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 60 bin/attnrt_flex_bench --hdim 128 --seqlen 8192,16384 $M \
    --backward 0 --reps 10 --csv $O/hd128_$run.csv > $O/hd128_$run.txt 2>&1
  echo "hd128 $run rc=$?"
done
echo "== hd64: S hd mod | new_1 ms | torch ms | ratio || base_1 ratio || new_2 ratio"
paste -d'|' <(grep -E "^\| [0-9]" $O/ratios_hd64_new_1.md | cut -d'|' -f2,3,4,6,7,10) \
  <(grep -E "^\| [0-9]" $O/ratios_hd64_base_1.md | cut -d'|' -f6,10) <(grep -E "^\| [0-9]" $O/ratios_hd64_new_2.md | cut -d'|' -f6,10)
grep -A8 "built-in causal" $O/ratios_hd64_new_1.md
echo "== hd128: backend/mod/S base new (ms)"
join -t, <(awk -F, 'NR>1{print $1"/"$2"/"$5","$7}' $O/hd128_base_1.csv | sort) \
         <(awk -F, 'NR>1{print $1"/"$2"/"$5","$7}' $O/hd128_new_1.csv | sort)
