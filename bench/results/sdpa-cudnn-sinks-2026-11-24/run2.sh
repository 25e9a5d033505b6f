#!/usr/bin/env bash
# Issue 16, call 2: the CUDA sdpa plugin with sinks (cuDNN's sink_token and dsink_token as they
# are: call 1 showed cuDNN's dsink_token already has the ABI's sign, and that it differs between
# repeats of the deterministic backward, which is now refused with sinks): the whole sdpa GPU
# suite: the grid (now with 12 sink cases), 200 random cases (a third with sinks where cuDNN
# takes them), and the rest (refusals, graph cache, forward without LSE).
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/gpu.txt 2>&1
python3 -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())" >> $O/gpu.txt 2>&1
ATTNRT_PLUGIN_PATH=$PWD/variants/final timeout 400 ./bin/attnrt_gpu_tests --gtest_filter='Sdpa/*:SdpaCuda.*:SdpaCudaRandom.*' \
  --gtest_output=xml:$O/sdpa_suite.xml > $O/sdpa_suite.txt 2>&1
echo "sdpa suite rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED|sdpa random:|sdpa grid:" $O/sdpa_suite.txt | tail -14
grep -c "sinks 1" $O/sdpa_suite.txt
