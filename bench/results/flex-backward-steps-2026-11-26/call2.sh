#!/usr/bin/env bash
# Issue 15: where flex's causal kernels spend the instructions flash_attention_3's built-in causal
# ones do not (call 1: the flex backward executes 34% more instructions for the same FP32 work).
# ncu with SourceCounters on this tree's plugins: the backward at hd128 S8192 and the forward at
# hd128 S2048, each flex kernel (causal as a mask_mod) beside flash_attention_3's causal one; the
# per-SASS-instruction counts exported as CSV (--page source --print-source sass).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_steps2
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call2; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
SEC="--section SourceCounters --section InstructionStats --section WarpStateStats --section SpeedOfLight"
prof() {  # name, "kernel filter", bench args...
  local name=$1 filter=$2; shift 2
  timeout 150 $NCU $filter -c 1 $SEC -o $O/$name "$@" > $O/$name.log 2>&1; echo "$name rc=$?"
  $NCU -i $O/$name.ncu-rep --page source --print-source sass --csv > $O/${name}_sass.csv 2>/dev/null
  $NCU -i $O/$name.ncu-rep > $O/$name.txt 2>&1
  gzip -f $O/${name}_sass.csv
}
B="bin/attnrt_flex_bench --mods causal --reps 1"
prof flex_bwd_hd128 "-k regex:attnrt_flex_hopper_backward" $B --hdim 128 --seqlen 8192 --backward 1
prof fa3_bwd_hd128 "--kernel-name-base demangled -k regex:fa3::backward_kernel" $B --hdim 128 --seqlen 8192 --backward 1
prof flex_fwd_hd128 "-k regex:attnrt_flex_hopper_forward" $B --hdim 128 --seqlen 2048
prof fa3_fwd_hd128 "--kernel-name-base demangled -k regex:fa3::forward_kernel" $B --hdim 128 --seqlen 2048
grep -E "Duration|Executed Instructions  " $O/*.txt
rm -f $O/*.ncu-rep
cd $O/.. && tar czf call2.tgz call2 && rm -rf call2
