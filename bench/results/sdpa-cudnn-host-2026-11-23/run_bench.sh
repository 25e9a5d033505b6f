#!/usr/bin/env bash
# Call 3: the host-time benchmark alone, as run.sh's step 1 but with 0.2 s of timed calls per
# repetition (call 2 took 0.05 s), on the same staged .gpu-sdpa16/ (carry [".gpu-sdpa16"],
# command "bash .gpu-sdpa16/run_bench.sh").
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
uptime > $O/env.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/env.txt
ATTNRT_SDPA_CUDNN_TRACE=1 timeout 100 ./bin/attnrt_sdpa_cuda_host_bench --benchmark_min_time=0.2 \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_out=$O/host_bench.json --benchmark_out_format=json > $O/host_bench.txt 2> $O/host_bench_stderr.txt
echo "host bench rc=$?"
python3 host_bench_summary.py $O/host_bench.json $O/host_bench_stderr.txt > $O/host_bench_summary.txt 2>&1
cat $O/env.txt $O/host_bench_summary.txt
