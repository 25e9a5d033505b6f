#!/usr/bin/env bash
# Issue 15: where flex_attention's Hopper forward spends its short walks now (after this folder's
# change): ncu (SourceCounters with per-SASS stall sampling, warp states, launch, occupancy, speed
# of light), one kernel each: flex's 256-key window and 90% block-sparse mask at hd64 S16384 (128
# rows), flex's causal mask_mod at hd64 S2048 on 192 rows (ATTNRT_FLEX_ROWS=192), and
# flash_attention_3's built-in causal on the same shape.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/fc_prof
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call6; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
SEC="--section SourceCounters --section WarpStateStats --section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats --section InstructionStats"
prof() {  # name, "kernel filter", command...
  local name=$1 filter=$2; shift 2
  timeout 150 $NCU --clock-control none $filter --launch-skip 3 -c 1 $SEC -o $O/$name "$@" > $O/$name.log 2>&1; echo "$name rc=$?"
  $NCU -i $O/$name.ncu-rep --page source --print-source sass --csv > $O/${name}_sass.csv 2>/dev/null; gzip -f $O/${name}_sass.csv
  $NCU -i $O/$name.ncu-rep > $O/$name.txt 2>&1
}
F="-k regex:attnrt_flex_hopper_forward"
prof flex_window_hd64_s16k "$F" bin/attnrt_flex_bench --hdim 64 --seqlen 16384 --mods sliding_window_256 --backward 0 --reps 1
prof flex_sparse_hd64_s16k "$F" bin/attnrt_flex_bench --hdim 64 --seqlen 16384 --mods block_sparse_90 --backward 0 --reps 1
ATTNRT_FLEX_ROWS=192 prof flex_causal192_hd64_s2k "$F" bin/attnrt_flex_bench --hdim 64 --seqlen 2048 --mods causal --backward 0 --reps 1
prof fa3_causal_hd64_s2k "--kernel-name-base demangled -k regex:fa3::forward_kernel" bin/attnrt bench attnrt.device=cuda \
  --hdim 64 --seqlen 2048 --mask causal --backends flash_attention_3 --no-backward --warmup 3 --iterations 1
grep -E "Duration|Executed Instructions  |Grid Size|Registers Per|Warp Cycles Per Issued|Issue Slots Busy|Block Size" $O/*.txt | head -40
rm -f $O/*.ncu-rep
cd $O/.. && tar czf call6.tgz call6 && rm -rf call6
