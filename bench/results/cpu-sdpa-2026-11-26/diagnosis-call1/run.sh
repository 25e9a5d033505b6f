#!/bin/bash
# issue 19 diagnosis: where the short bf16 forward rows lose to PyTorch on the Xeon
cd "$(dirname "$0")"; H=$PWD
export LD_LIBRARY_PATH=$H/pkg/lib
mkdir -p $OUT/p; cd $OUT/p
nproc > nproc.txt; lscpu > lscpu.txt
F='BM_sdpa_forward/seqlen:(512|1024|2048)/causal:./bf16:1'
ab() { # name, env...
  local n=$1; shift
  env "$@" $H/pkg/bin/attnrt_cpu_bench --benchmark_filter="$F" --benchmark_format=csv > a_$n.csv 2> a_$n.err
}
for T in 16 1 4 8; do
  ab t$T ATTNRT_BENCH_THREADS=$T
  timeout 120 python3 $H/torch_cpu_anchors.py --threads $T --seqlens 512,1024,2048 --passes forward --min-time 0.5 > torch_t$T.txt 2>&1
done
ab bq64 ATTNRT_BENCH_THREADS=16 ATTNRT_SDPA_BQ=64
ab bq32 ATTNRT_BENCH_THREADS=16 ATTNRT_SDPA_BQ=32
ab bk128 ATTNRT_BENCH_THREADS=16 ATTNRT_SDPA_BK=128
ab bk512 ATTNRT_BENCH_THREADS=16 ATTNRT_SDPA_BK=512
ab bind ATTNRT_BENCH_THREADS=16 OMP_PROC_BIND=close OMP_PLACES=cores
ab active ATTNRT_BENCH_THREADS=16 OMP_WAIT_POLICY=active
ab t16b ATTNRT_BENCH_THREADS=16
timeout 60 python3 $H/torch_cpu_anchors.py --threads 16 --seqlens 512,1024,2048 --passes forward --min-time 0.5 > torch_t16b.txt 2>&1
python3 -c "import torch; print(torch.__version__, torch.__config__.parallel_info())" > torch_info.txt 2>&1
