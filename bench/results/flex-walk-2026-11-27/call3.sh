#!/usr/bin/env bash
# Issue 15, 2026-11-27 (eighth session), call 3, on the committed br build (lib/, 0ccdb85):
# compute-sanitizer memcheck on the hand-written-lists test (the Hopper forward at each tile
# height over 128- and 256-row and -key blocks, a broadcast batch, entries outside the keys) and
# on two forwards (causal hd64, the random block-sparse mask hd128); then Nsight Compute's
# per-instruction stall samples of flex causal and flash_attention_3 causal, hd64 S2048, as
# bench/results/flex-tma-o-2026-11-27 call 2 took them on the build before.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call3; mkdir -p $O
trap 'cd $O/.. && tar czf call3.tgz call3 && rm -rf call3' EXIT
nvidia-smi -L > $O/gpu.txt
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
CASES='FlexGpuBlockMask.HandWrittenListsMeanWhatTheContractSays:Mods/FlexGpu.ForwardWithinTwiceTheCpuPluginsError/bf16_hd64_causal:Mods/FlexGpu.ForwardWithinTwiceTheCpuPluginsError/bf16_hd128_random_block_sparse'
ATTNRT_CACHE_DIR=/tmp/fc_san timeout 300 $SAN --tool memcheck --error-exitcode 7 bin/attnrt_gpu_tests --gtest_filter="$CASES" > $O/memcheck.txt 2>&1
echo "memcheck rc=$? ($SECONDS s): $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $O/memcheck.txt | tr '\n' ' ')"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
export ATTNRT_CACHE_DIR=/tmp/fc_n
bin/attnrt_flex_bench --hdim 64 --seqlen 2048 --mods causal --backward 0 --reps 1 > $O/warm.txt 2>&1
run() {  # name, kernel regex, skip
  timeout 120 $NCU --clock-control none --cache-control none --kernel-name-base demangled -k "regex:$2" \
    --launch-skip $3 --launch-count 1 --section SourceCounters --section WarpStateStats --import-source no \
    -o $O/$1 bin/attnrt_flex_bench --hdim 64 --seqlen 2048 --mods causal --backward 0 --reps 1 > $O/ncu_$1.txt 2>&1
  $NCU -i $O/$1.ncu-rep --page source --csv --print-source sass > $O/sass_$1.csv 2> $O/sass_$1.err
  $NCU -i $O/$1.ncu-rep --page details --print-details all > $O/details_$1.txt 2>&1
  gzip -f $O/sass_$1.csv $O/details_$1.txt
  echo "$1 rc=$? ($SECONDS s)"
}
run flex_causal64 'attnrt_flex_hopper_forward' 20
run fa3_causal64 'fa3::forward_kernel' 10
rm -f $O/*.ncu-rep
for f in flex_causal64 fa3_causal64; do
  python3 ../bench/results/flex-fixed-cost-2026-11-27/sass_hot.py $O/sass_$f.csv.gz 8 2>&1 | cut -c1-150
done
