#!/bin/bash
# Issue 19, 2026-11-27: the CPU table of main fa95d9e's sdpa (split-KV where a call has fewer
# items than threads) against PyTorch's CPU SDPA on the GPU machine's 16 cores, one pass per call:
# `table.sh forward` or `table.sh backward`. PyTorch is timed before and after attnrt
# (bench/torch_cpu_anchors.py), attnrt's rows are medians of 3 repetitions. The forward call also
# times BM_sdpa_decode for base (main 26b668f's plugin, pkg/variants/base) and new, alternated.
PASS=$1
cd "$(dirname "$0")"; R=$(cd ../../.. && pwd)
P=$R/build-cpubench/pkg
export LD_LIBRARY_PATH=$P/lib ATTNRT_BENCH_THREADS=16
chmod -R go-w $P
O=$OUT/table-$PASS; mkdir -p $O; cd $O
trap 'cd $OUT && tar czf table-$PASS.tgz table-$PASS && rm -rf table-$PASS' EXIT
lscpu > lscpu.txt
python3 -c "import torch; print(torch.__version__, torch.backends.cpu.get_cpu_capability())" > torch_version.txt
python3 $R/bench/torch_cpu_anchors.py --threads 16 --passes $PASS --min-time 1.0 > torch_before.txt 2>&1
mv $OUT/torch_cpu_t16.csv torch_before.csv
$P/bin/attnrt_cpu_bench --benchmark_filter="BM_sdpa_$PASS" --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_format=csv > attnrt_t16.csv 2> attnrt_t16.err
python3 $R/bench/torch_cpu_anchors.py --threads 16 --passes $PASS --min-time 1.0 > torch_after.txt 2>&1
mv $OUT/torch_cpu_t16.csv torch_after.csv
python3 $R/bench/cpu_ratios.py attnrt_t16.csv torch_before.csv torch_after.csv
if [ "$PASS" = forward ]; then
  for round in 1 2; do
    for v in base new; do
      if [ $v = base ]; then export ATTNRT_PLUGIN_PATH=$P/variants/base; else unset ATTNRT_PLUGIN_PATH; fi
      $P/bin/attnrt_cpu_bench --benchmark_filter=BM_sdpa_decode --benchmark_repetitions=3 \
        --benchmark_report_aggregates_only=true --benchmark_format=csv > ${v}_decode_r$round.csv 2> ${v}_decode_r$round.err
      echo "== $v decode round $round"; grep median ${v}_decode_r$round.csv | cut -d, -f1,3 | sed 's/BM_sdpa_decode\///;s/\/min_time.*median//'
    done
  done
fi
