#!/usr/bin/env bash
# Issue 13: where a hd128 backward's time goes beside its main kernel, flash_attention_3 (through
# attnrt.torch, the package tools/gpu_stage_python.sh staged in .gpu-py/) against PyTorch's cuDNN
# and flash SDPA backends, per kernel (torch.profiler), in one process; bf16, 16k tokens, hidden 2048.
set -u
cd "$(dirname "$0")/../../.."
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
export LD_LIBRARY_PATH=$PWD/.gpu-py/lib:$(py_lib nvidia.cudnn):$(py_lib nvidia.cublas):/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/.gpu-py/python PYTHONUNBUFFERED=1
chmod -R go-w .gpu-py 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O/causal
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
OUT=$O timeout 200 python3 bench/python/backward_kernels.py --hdim 128 --seqlen 2048,4096,8192,16384 --mask full \
  > $O/full.txt 2>&1; echo "full rc=$?"
OUT=$O/causal timeout 100 python3 bench/python/backward_kernels.py --hdim 128,64 --seqlen 4096 --mask causal,full \
  > $O/more.txt 2>&1; echo "more rc=$?"
grep -E "span|us  " $O/full.txt | head -80
