#!/usr/bin/env bash
# Call 5: the final plugin (supports() refuses seqlen_q = seqlen_k = 1 by rule; no validation of
# the backward graph) in .gpu-sdpa16/lib: the A/B of run_ab.sh again against main 488ab1c's plugin
# (.gpu-sdpa16/ab_main/lib), then the GPU tests SdpaCuda.* (forward without LSE, the graph cache,
# the refusals) with this plugin.
cd "$(dirname "$0")"
bash run_ab.sh
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
O=${OUT:-/tmp/o}
LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas timeout 60 ./bin/attnrt_gpu_tests \
  --gtest_filter='SdpaCuda.*' > $O/sdpa_cuda_tests.txt 2>&1
echo "SdpaCuda.* rc=$?"; grep -E "OK \]|FAILED|Failure" $O/sdpa_cuda_tests.txt
