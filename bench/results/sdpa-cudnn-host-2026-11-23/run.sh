#!/usr/bin/env bash
# The H100 call behind this folder (issue 16: sdpa on cuDNN). Staged from branch sdpa16 into
# .gpu-sdpa16/ (bin/: attnrt_gpu_tests with tests/gpu/sdpa_cuda_test.cpp, and
# attnrt_sdpa_cuda_host_bench, stripped; lib/: this branch's sdpa_cuda plugin, libattnrt and the
# plugins eager, sdpa, eager_cuda and flash_attention_2 of main 488ab1c's staged build (.gpu/),
# libbenchmark.so.1debian and the other libraries the GPU machine lacks; this script and
# host_bench_summary.py), then device run: carry [".gpu-sdpa16"], command "bash .gpu-sdpa16/run.sh".
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
# PyTorch's libcudnn first, as in bench/results/sdpa-cudnn-2026-11-23/.
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores: $(nproc)"; lscpu | grep "Model name"
  python3 -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())"
  ls $cudnn | grep "libcudnn.so"; } > $O/env.txt 2>&1
cat $O/env.txt

# 1. Host time per call on a graph-cache hit (Google Benchmark), against an empty kernel's launch.
ATTNRT_SDPA_CUDNN_TRACE=1 timeout 80 ./bin/attnrt_sdpa_cuda_host_bench --benchmark_min_time=0.05 \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_out=$O/host_bench.json --benchmark_out_format=json > $O/host_bench.txt 2> $O/host_bench_stderr.txt
echo "host bench rc=$?"
python3 host_bench_summary.py $O/host_bench.json $O/host_bench_stderr.txt > $O/host_bench_summary.txt 2>&1
cat $O/host_bench_summary.txt

# 2. The sdpa GPU suite: the 200 random cases in a process of their own first (so that they run
# whatever the rest takes), then the grid, forward without LSE, the graph cache and the refusals.
T=./bin/attnrt_gpu_tests
timeout 150 $T --gtest_filter='SdpaCudaRandom.*' --gtest_output=xml:$O/sdpa_random.xml > $O/sdpa_random.txt 2>&1
echo "random rc=$?"
grep -E "^sdpa random|tests? from .* ran|PASSED|FAILED|Failure" $O/sdpa_random.txt | head -12
timeout 100 $T --gtest_filter='Sdpa/*:SdpaCuda.*' --gtest_output=xml:$O/sdpa_rest.xml > $O/sdpa_rest.txt 2>&1
echo "grid and the rest rc=$?"
grep -E "^sdpa grid|tests? from .* ran|PASSED|FAILED|Failure" $O/sdpa_rest.txt | head -12
(cd $O && tar cf sdpa_xml.tar sdpa_random.xml sdpa_rest.xml 2>/dev/null && rm -f sdpa_random.xml sdpa_rest.xml)
ls $O
