#!/usr/bin/env bash
# Issue 15, 2026-11-27 (seventh session), call 2, on call 1's tmao build (lib/): where flex causal
# still trails flash_attention_3's at S2048. Nsight Compute's per-instruction stall samples of one
# forward each (flex causal, flash_attention_3 causal; hd64 and hd128), as
# bench/results/flex-fixed-cost-2026-11-27 call 3 took them on main; then flex's hd64 forward on
# 128-row tiles (ATTNRT_FLEX_ROWS=128) against the call's choice (192), three rounds alternated.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call2; mkdir -p $O
trap 'cd $O/.. && tar czf call2.tgz call2 && rm -rf call2' EXIT
nvidia-smi -L > $O/gpu.txt
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
export ATTNRT_CACHE_DIR=/tmp/fc_n
bin/attnrt_flex_bench --hdim 64,128 --seqlen 2048 --mods causal --backward 0 --reps 1 > $O/warm.txt 2>&1
run() {  # name, kernel regex, skip, hd
  timeout 120 $NCU --clock-control none --cache-control none --kernel-name-base demangled -k "regex:$2" \
    --launch-skip $3 --launch-count 1 --section SourceCounters --section WarpStateStats --import-source no \
    -o $O/$1 bin/attnrt_flex_bench --hdim $4 --seqlen 2048 --mods causal --backward 0 --reps 1 > $O/ncu_$1.txt 2>&1
  $NCU -i $O/$1.ncu-rep --page source --csv --print-source sass > $O/sass_$1.csv 2> $O/sass_$1.err
  $NCU -i $O/$1.ncu-rep --page details --print-details all > $O/details_$1.txt 2>&1
  gzip -f $O/sass_$1.csv $O/details_$1.txt
  echo "$1 rc=$? ($SECONDS s)"
}
run flex_causal64 'attnrt_flex_hopper_forward' 20 64
run fa3_causal64 'fa3::forward_kernel' 10 64
run flex_causal128 'attnrt_flex_hopper_forward' 20 128
run fa3_causal128 'fa3::forward_kernel' 10 128
rm -f $O/*.ncu-rep
for f in flex_causal64 fa3_causal64 flex_causal128 fa3_causal128; do
  python3 ../bench/results/flex-fixed-cost-2026-11-27/sass_hot.py $O/sass_$f.csv.gz 8 2>&1 | cut -c1-150
done
for r in 1 2 3; do
  for rows in 192 128; do
    ATTNRT_FLEX_ROWS=$rows timeout 60 bin/attnrt_flex_bench --hdim 64 --seqlen 2048 --mods causal,dense,document_mask \
      --backward 0 --reps 20 --csv $O/rows${rows}_hd64_$r.csv > $O/rows${rows}_hd64_$r.txt 2>&1
  done
done
python3 ../bench/results/flex-lists-2026-11-27/table.py $O 2048 2>/dev/null || true
