#!/usr/bin/env bash
# Issue 16: sinks through cuDNN's sink_token / dsink_token in the CUDA sdpa plugin. Two builds of
# the plugin differ only in whether the backward negates cuDNN's dsink_token
# (ATTNRT_SDPA_NEGATE_DSINK, variants/neg1 and variants/neg0): the sink grid cases on both, then
# the whole sdpa GPU suite (grid, 200 random cases, the rest) on the one whose dsinks match the
# fp64 reference.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/gpu.txt 2>&1
python3 -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())" >> $O/gpu.txt 2>&1
pick=""
for v in neg1 neg0; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 120 ./bin/attnrt_gpu_tests --gtest_filter='Sdpa/SdpaCudaGrid.*sinks*' > $O/sinks_grid_$v.txt 2>&1
  rc=$?; echo "sinks grid $v rc=$rc"; grep -E "tests? from .* ran|PASSED|FAILED" $O/sinks_grid_$v.txt | tail -3
  grep -m3 -A1 "dsinks:" $O/sinks_grid_$v.txt
  if [ $rc = 0 ] && [ -z "$pick" ]; then pick=$v; fi
done
echo "picked: $pick"
[ -z "$pick" ] && exit 1
ATTNRT_PLUGIN_PATH=$PWD/variants/$pick timeout 300 ./bin/attnrt_gpu_tests --gtest_filter='Sdpa/*:SdpaCuda.*:SdpaCudaRandom.*' \
  --gtest_output=xml:$O/sdpa_suite.xml > $O/sdpa_suite.txt 2>&1
echo "sdpa suite rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED|sdpa random:|sdpa grid:" $O/sdpa_suite.txt | tail -12
