#!/usr/bin/env bash
# Issue 15, call 3 (main 26b668f): Nsight Compute's per-instruction stall samples (source page,
# SASS) of one forward each: flex block_sparse_90, flex causal, flash_attention_3's causal, hd64
# S2048; the 20 instructions with the most samples and the stall reasons summed.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=${OUT:-/tmp/o}/call3; mkdir -p $O
trap 'cd $O/.. && tar czf call3.tgz call3 && rm -rf call3' EXIT
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
export ATTNRT_CACHE_DIR=/tmp/fc_n
bin/attnrt_flex_bench --hdim 64 --seqlen 2048 --mods causal,block_sparse_90 --backward 0 --reps 1 > $O/warm.txt 2>&1
run() {  # name, kernel regex, skip, mods
  timeout 150 $NCU --clock-control none --cache-control none --kernel-name-base demangled -k "regex:$2" \
    --launch-skip $3 --launch-count 1 --section SourceCounters --section WarpStateStats --import-source no \
    -o $O/$1 bin/attnrt_flex_bench --hdim 64 --seqlen 2048 --mods $4 --backward 0 --reps 1 > $O/ncu_$1.txt 2>&1
  $NCU -i $O/$1.ncu-rep --page source --csv --print-source sass > $O/sass_$1.csv 2> $O/sass_$1.err
  $NCU -i $O/$1.ncu-rep --page details --print-details all > $O/details_$1.txt 2>&1
  echo "$1 rc=$? $(wc -l < $O/sass_$1.csv) sass lines"
}
run flex_sparse 'attnrt_flex_hopper_forward' 20 block_sparse_90
run flex_causal 'attnrt_flex_hopper_forward' 20 causal
run fa3_causal 'fa3::forward_kernel' 10 causal
rm -f $O/*.ncu-rep
head -3 $O/sass_flex_sparse.csv | cut -c1-600
