#!/usr/bin/env bash
# Issue 16 (sdpa on cuDNN: paged KV, host time), one H100 call. Staged from branch sdpa16b into
# .gpu-sdpa16b/: bin/ (attnrt_gpu_tests with tests/gpu/sdpa_cuda_test.cpp alone, and
# attnrt_sdpa_cuda_host_bench, stripped), lib/ (libattnrt of sdpa16b, the plugins eager, sdpa,
# eager_cuda and flash_attention_2 of main's build-gpu, the libraries the GPU machine lacks),
# variants/branch/sdpa_cuda (this branch's plugin) and variants/main/sdpa_cuda (main 6ad2d88's,
# as staged in .gpu-s16), picked with ATTNRT_PLUGIN_PATH. Device run: carry [".gpu-sdpa16b"],
# command "bash .gpu-sdpa16b/run.sh".
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O/r
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores: $(nproc)"; uptime
  python3 -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())"; } > $O/r/env.txt 2>&1
cat $O/r/env.txt
B=$PWD/variants/branch; M=$PWD/variants/main

# 1. Host time per call on a graph-cache hit: this branch's plugin (every row, with the cuDNN
# frontend's own execute as the floor), then main's plugin (sdpa rows and the floor), same binary.


bench() {  # side filter timeout
  ATTNRT_PLUGIN_PATH=$2 ATTNRT_SDPA_CUDNN_TRACE=1 timeout $4 ./bin/attnrt_sdpa_cuda_host_bench \
    --benchmark_filter="$3" --benchmark_min_time=0.1 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_out=$O/r/host_$1.json --benchmark_out_format=json > /dev/null 2> $O/r/host_$1_stderr.txt
  echo "host bench $1 rc=$?"
  python3 host_bench_summary.py $O/r/host_$1.json $O/r/host_$1_stderr.txt > $O/r/host_$1_summary.txt 2>&1
  cat $O/r/host_$1_summary.txt
}
F='EmptyKernelLaunch|cudnn_frontend|/sdpa/'
bench branch $B '.' 50
bench main $M "$F" 30

# 2. The sdpa GPU tests: paged (new, a process of its own), the 200 random cases, then the grid,
# forward without LSE, the graph cache and the refusals.
T=./bin/attnrt_gpu_tests
run_tests() {  # name filter timeout
  ATTNRT_PLUGIN_PATH=$B timeout $3 $T --gtest_filter="$2" --gtest_output=xml:$O/r/$1.xml > $O/r/$1.txt 2>&1
  echo "$1 rc=$?"
  grep -E "^sdpa (random|grid)|tests? from .* ran|PASSED|FAILED|Failure" $O/r/$1.txt | head -30
}
run_tests paged 'Sdpa/SdpaCudaPaged.*' 40
run_tests random 'SdpaCudaRandom.*' 95
run_tests rest 'Sdpa/SdpaCudaGrid.*:SdpaCuda.*' 75
(cd $O && tar czf results.tgz r && rm -rf r)
ls -la $O
