#!/usr/bin/env bash
# Issue 19 (dispatch) and issue 16 (host time on a cache hit), one call on the H100: main's
# libattnrt and plugins (ATTNRT_CUDA_KERNELS=reduced: flash_attention_2 has head_dim 64 and 256),
# the dispatch benchmark on this machine's CPU, the host-time benchmark with the direct-plugin rows
# at head_dim 64, then the sdpa and threaded GPU tests and attnrt lock/resolve as a smoke test.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
nvidia-smi -L > $O/machine.txt; nproc >> $O/machine.txt; python3 -c "import torch; print(torch.__version__)" >> $O/machine.txt 2>&1
ATTNRT_DISPATCH_PLUGIN_DIR=$PWD/dispatch_plugins timeout 200 ./bin/attnrt_dispatch_bench --benchmark_repetitions=5 \
  --benchmark_min_time=0.2 --benchmark_out=$O/dispatch.csv --benchmark_out_format=csv > $O/dispatch.txt 2>&1
echo "dispatch rc=$?"; grep -E "_median" $O/dispatch.txt | head -40
ATTNRT_HOST_BENCH_HEAD_DIM=64 timeout 240 ./bin/attnrt_sdpa_cuda_host_bench --benchmark_min_time=0.05 \
  --benchmark_repetitions=5 --benchmark_out=$O/host.csv --benchmark_out_format=csv > $O/host.txt 2>&1
echo "host rc=$?"; grep -E "_median" $O/host.txt | head -40
timeout 120 ./bin/attnrt_gpu_tests --gtest_filter='SdpaCuda.*:HostApiThreadsGpu.*' > $O/gpu_tests.txt 2>&1
echo "tests rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED" $O/gpu_tests.txt | tail -8
(./bin/attnrt lock ../configs/examples/verl_ppo.yaml -o $O/attnrt.lock && ./bin/attnrt resolve ../configs/examples/verl_ppo.yaml +attnrt.lockfile=$O/attnrt.lock attnrt.device=cuda) > $O/lock.txt 2>&1
echo "lock rc=$?"; tail -12 $O/lock.txt
