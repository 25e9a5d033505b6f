#!/usr/bin/env bash
# Issue 13: call 7's per-kernel breakdown with flash_attention_3 timed first in each case (call 7
# timed it right after PyTorch's flash backend, and at S16384 found it 0.87x cuDNN where call 8's
# sustained run and attnrt bench found 0.99-1.02x), then call 8's sustained comparison at hd64
# (full and causal) and hd128 causal.
set -u
cd "$(dirname "$0")/../../.."
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
export LD_LIBRARY_PATH=$PWD/.gpu-py/lib:$(py_lib nvidia.cudnn):$(py_lib nvidia.cublas):/usr/local/cuda/lib64
export PYTHONPATH=$PWD/.gpu-py/python PYTHONUNBUFFERED=1
O=${OUT:-/tmp/o}/call9; mkdir -p $O/hd64 $O/hd128_causal
chmod -R go-w .gpu-py 2>/dev/null
nvidia-smi -L > $O/gpu.txt
OUT=$O timeout 120 python3 bench/python/backward_kernels.py --hdim 128 --seqlen 4096,16384 --mask full --impl-first \
  > $O/breakdown.txt 2>&1; echo "breakdown rc=$?"; grep span $O/breakdown.txt
OUT=$O/hd64 timeout 150 python3 bench/python/sustained.py --hdim 64 --seqlen 4096,16384 --mask full,causal --seconds 2 \
  > $O/hd64/sustained.txt 2>&1; echo "sustained hd64 rc=$?"
OUT=$O/hd128_causal timeout 100 python3 bench/python/sustained.py --hdim 128 --seqlen 4096,16384 --mask causal --seconds 2 \
  > $O/hd128_causal/sustained.txt 2>&1; echo "sustained hd128 causal rc=$?"
grep -ho "'case.*tflops_sustained': [0-9.]*" $O/*/sustained.txt
cd $O/.. && tar czf call9.tgz call9 && rm -rf call9
