#!/usr/bin/env bash
# Issue 15, call 2 (main 26b668f): Nsight Compute's sections for one forward of each of
# flash_attention_3's built-in causal, flex causal (mask_mod, the remembered single kernel),
# flex dense and flex block_sparse_90, hd64 S2048 (no cache flush, as calls back to back).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/o}/call2; mkdir -p $O
trap 'cd $O/.. && tar czf call2.tgz call2 && rm -rf call2' EXIT
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
S="--section SpeedOfLight --section WarpStateStats --section InstructionStats --section SchedulerStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis"
export ATTNRT_CACHE_DIR=/tmp/fc_n
bin/attnrt_flex_bench --hdim 64 --seqlen 2048 --mods causal,dense,block_sparse_90 --backward 0 --reps 1 > $O/warm.txt 2>&1
run() {  # name, kernel regex, skip, mods
  timeout 150 $NCU --clock-control none --cache-control none --kernel-name-base demangled -k "regex:$2" \
    --launch-skip $3 --launch-count 1 $S --print-summary none \
    bin/attnrt_flex_bench --hdim 64 --seqlen 2048 --mods $4 --backward 0 --reps 1 > $O/ncu_$1.txt 2>&1
  echo "$1 rc=$?"
}
run fa3_causal 'fa3::forward_kernel' 10 causal
run flex_causal 'attnrt_flex_hopper_forward' 20 causal
run flex_dense 'attnrt_flex_hopper_forward' 20 dense
run flex_sparse 'attnrt_flex_hopper_forward' 20 block_sparse_90
run states_sparse 'attnrt_flex_block_states' 20 block_sparse_90
for f in $O/ncu_*.txt; do
  echo "== $f"; grep -E "Duration|Executed Instructions  |Block Size|Grid Size|Registers Per|Warp Cycles Per Issued|Issued Ipc Active|No Eligible|Memory Throughput|DRAM Throughput|L2 Hit Rate|Compute \(SM\) Throughput|Achieved Occupancy" $f | head -20
done
