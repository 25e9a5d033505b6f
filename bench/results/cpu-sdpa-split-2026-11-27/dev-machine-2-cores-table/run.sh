#!/bin/bash
# Issue 19, 2026-11-27: the CPU table on the development machine (2 cores; today an AMD EPYC of
# family 25 model 17, Zen 4, where 2026-11-25/26's tables ran on family 26, Zen 5), main
# fa95d9e. (1) attnrt_and_torch_t2.csv: one binary with libtorch linked (build-bench:
# -DATTNRT_BENCH_TORCH=ON), both in the same process, as the earlier tables; (2) separate
# processes as on the GPU machine: PyTorch (bench/torch_cpu_anchors.py) before and after attnrt
# (build-cpubench/pkg, no libtorch).
cd "$(dirname "$0")"; R=$(cd ../../../.. && pwd)
export ATTNRT_BENCH_THREADS=2
lscpu > lscpu.txt
[ -f attnrt_and_torch_t2.csv ] || $R/build-bench/bin/attnrt_cpu_bench --benchmark_filter='BM_(sdpa|torch)_(forward|backward)' --benchmark_min_time=0.5 \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_format=csv > attnrt_and_torch_t2.csv 2> attnrt_and_torch_t2.err
OUT=$PWD python3 $R/bench/torch_cpu_anchors.py --threads 2 --min-time 1.0 > torch_before.txt 2>&1
mv torch_cpu_t2.csv torch_before.csv
LD_LIBRARY_PATH=$R/build-cpubench/pkg/lib $R/build-cpubench/pkg/bin/attnrt_cpu_bench \
  --benchmark_filter='BM_sdpa_(forward|backward)' --benchmark_min_time=0.5 --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_format=csv > attnrt_t2.csv 2> attnrt_t2.err
OUT=$PWD python3 $R/bench/torch_cpu_anchors.py --threads 2 --min-time 1.0 > torch_after.txt 2>&1
mv torch_cpu_t2.csv torch_after.csv
python3 $R/bench/cpu_ratios.py attnrt_and_torch_t2.csv attnrt_and_torch_t2.csv > table_same_process.md
python3 $R/bench/cpu_ratios.py attnrt_t2.csv torch_before.csv torch_after.csv > table_separate.md
