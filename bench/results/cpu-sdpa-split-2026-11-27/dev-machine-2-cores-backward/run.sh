#!/bin/bash
# Issue 19, 2026-11-27: the backward per (sequence, kv head) where every thread has a pair
# (new), against main fa95d9e's two passes (pkg/variants/split), on the development machine
# (2 cores, AMD EPYC family 25 model 17, Zen 4), alternated, between two PyTorch runs
# (bench/torch_cpu_anchors.py, separate processes).
cd "$(dirname "$0")"; R=$(cd ../../../.. && pwd); P=$R/build-cpubench/pkg
export ATTNRT_BENCH_THREADS=2 LD_LIBRARY_PATH=$P/lib
lscpu > lscpu.txt
OUT=$PWD python3 $R/bench/torch_cpu_anchors.py --threads 2 --passes backward --min-time 1.0 > torch_before.txt 2>&1
mv torch_cpu_t2.csv torch_before.csv
for v in new split; do
  if [ $v = split ]; then export ATTNRT_PLUGIN_PATH=$P/variants/split; else unset ATTNRT_PLUGIN_PATH; fi
  $P/bin/attnrt_cpu_bench --benchmark_filter='BM_sdpa_backward' --benchmark_min_time=0.5 --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_format=csv > attnrt_${v}_t2.csv 2> attnrt_${v}_t2.err
done
unset ATTNRT_PLUGIN_PATH
OUT=$PWD python3 $R/bench/torch_cpu_anchors.py --threads 2 --passes backward --min-time 1.0 > torch_after.txt 2>&1
mv torch_cpu_t2.csv torch_after.csv
for v in new split; do
  python3 $R/bench/cpu_ratios.py attnrt_${v}_t2.csv torch_before.csv torch_after.csv > table_$v.md
done
