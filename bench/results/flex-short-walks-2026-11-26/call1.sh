#!/usr/bin/env bash
# Issue 15: where flex_attention's Hopper forward spends a short walk (a 256-key sliding window:
# three key blocks a 128-row tile, 12.6 us a tile at hd64 S16384 where the products take ~4):
# flash_attention_3's built-in window on the same shape (attnrt bench --window 256 --mask causal),
# then ncu (SourceCounters with per-SASS stall sampling, warp states, launch) of both forwards.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_walks1
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
timeout 60 bin/attnrt bench attnrt.device=cuda --hdim 64,128 --seqlen 8192,16384 --mask causal --window 256 \
  --backends flash_attention_3 --no-backward --csv $O/fa3_window.csv > $O/fa3_window.txt 2>&1; echo "fa3 window rc=$?"
timeout 90 bin/attnrt_flex_bench --hdim 64,128 --seqlen 8192,16384 --mods sliding_window_256,block_sparse_90 --reps 20 \
  --csv $O/flex.csv > $O/flex.txt 2>&1; echo "flex rc=$?"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
SEC="--section SourceCounters --section WarpStateStats --section SpeedOfLight --section LaunchStats --section Occupancy"
prof() {  # name, "kernel filter", command...
  local name=$1 filter=$2; shift 2
  timeout 150 $NCU --clock-control none $filter -c 1 $SEC -o $O/$name "$@" > $O/$name.log 2>&1; echo "$name rc=$?"
  $NCU -i $O/$name.ncu-rep --page source --print-source sass --csv > $O/${name}_sass.csv 2>/dev/null; gzip -f $O/${name}_sass.csv
  $NCU -i $O/$name.ncu-rep > $O/$name.txt 2>&1
}
prof flex_window_hd64 "-k regex:attnrt_flex_hopper_forward" bin/attnrt_flex_bench --hdim 64 --seqlen 16384 \
  --mods sliding_window_256 --reps 1
prof fa3_window_hd64 "--kernel-name-base demangled -k regex:fa3::forward_kernel" bin/attnrt bench attnrt.device=cuda \
  --hdim 64 --seqlen 16384 --mask causal --window 256 --backends flash_attention_3 --no-backward --warmup 0 --iterations 1
grep -E "Duration|Executed Instructions  |Grid Size|Registers Per|Warp Cycles Per Issued|Issue Slots Busy" $O/*.txt | head -30
rm -f $O/*.ncu-rep
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
