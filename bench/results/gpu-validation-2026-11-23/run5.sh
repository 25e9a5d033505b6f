#!/usr/bin/env bash
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
timeout 50 ./bin/attnrt_gpu_tests --gtest_filter='HostApiThreadsGpu.*' > $O/threads.txt 2>&1; echo "threads rc=$?"
grep -E "OK \]|FAILED|SKIPPED \]|Failure|Skipped" -A3 $O/threads.txt | grep -v "^\[20" | head -12
timeout 60 ./bin/attnrt_gpu_tests --gtest_filter='Sdpa/SdpaCudaGrid.*/*ragged_window:Sdpa/SdpaCudaGrid.*/*hd128*' > $O/sdpa2.txt 2>&1; echo "sdpa rc=$?"
grep -E "tests? from .* ran|PASSED|FAILED" $O/sdpa2.txt | tail -8
