#!/usr/bin/env bash
# Issue 15: why causal as a mask_mod runs at 0.71-0.78x of flash_attention_3's built-in causal at
# hd128 S2048 (batch 2, 16 heads, bf16): ncu on the first launch of each kernel in
# attnrt_flex_bench --hdim 128 --seqlen 2048 (the flex Hopper forward on the causal mod, then
# flash_attention_3's forward_kernel on the built-in causal), with the speed-of-light, warp-state,
# scheduler, launch and source-counter (SASS hot spots) sections; and nsys-free wall times of the
# whole forward call (memset, block-state kernel, forward) from the bench itself.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_prof
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --section SourceCounters --section InstructionStats"
timeout 30 bin/attnrt_flex_bench --hdim 128 --seqlen 2048 --csv $O/flex_bench.csv > $O/flex_bench.txt 2>&1
echo "bench rc=$?"; cut -d, -f1,2,7,8 $O/flex_bench.csv
timeout 200 $NCU --clock-control none --kernel-name-base demangled -k regex:attnrt_flex_hopper_forward -c 1 $S \
  bin/attnrt_flex_bench --hdim 128 --seqlen 2048 > $O/ncu_flex_causal.txt 2>&1
echo "ncu flex rc=$?"
timeout 200 $NCU --clock-control none --kernel-name-base demangled -k "regex:fa3::forward_kernel" -c 1 $S \
  bin/attnrt_flex_bench --hdim 128 --seqlen 2048 > $O/ncu_fa3_causal.txt 2>&1
echo "ncu fa3 rc=$?"
for f in $O/ncu_*.txt; do echo "== $f"; grep -E "^  [a-zA-Z_].*\(|Duration|Elapsed Cycles|Executed Ipc Active|Issue Slots Busy|Warp Cycles Per Issued|No Eligible|Executed Instructions |Registers Per|Stall" $f | tr -s ' ' | head -30; done
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
