#!/usr/bin/env bash
# Issue 18 on the H100: attnrt.torch's host time per call before (the package of c7d6b03,
# staged as .gpu-py-old/) and after (this commit's, .gpu-py/: the dense
# forward_with_workspace binding, no LSE or workspace tensor where the call needs none, one
# autograd output without return_lse), both by tools/gpu_stage_python.sh with the same GPU
# plugins; alternated twice: python3 bench/python/torch_overhead.py --device cuda. Then the CUDA
# Python tests with the new package, and the training example's step time (torch's SDPA through
# transformers against attnrt's flash_attention_2, old and new package). The outputs come back
# as one tar (the device tool returns a limited number of files). test_core.py's two CPU sdpa
# cases fall back to eager there (libdnnl is not on the GPU machine nor in the staged package).
set -u
cd "$(dirname "$0")/../../../.."
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
BASE_LD=$(py_lib nvidia.cudnn):$(py_lib nvidia.cublas):/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
chmod -R go-w .gpu-py .gpu-py-old 2>/dev/null
O=${OUT:-/tmp/o}/py; mkdir -p $O
nvidia-smi -L | tee $O/gpu.txt; python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__)" | tee -a $O/gpu.txt
use() { export LD_LIBRARY_PATH=$PWD/$1/lib:$BASE_LD PYTHONPATH=$PWD/$1/python; }
for r in 1 2; do
  for v in old new; do
    if [ $v = old ]; then use .gpu-py-old; else use .gpu-py; fi
    timeout 120 python3 bench/python/torch_overhead.py --device cuda --csv $O/overhead_${v}_$r.csv > $O/overhead_${v}_$r.txt 2>&1
    echo "overhead $v $r rc=$?"; tail -16 $O/overhead_${v}_$r.txt
  done
done
use .gpu-py
timeout 200 python3 -m pytest -q tests/python/test_torch_cuda.py tests/python/test_core.py tests/python/test_torch.py > $O/pytest_cuda.txt 2>&1
echo "pytest rc=$?"; tail -3 $O/pytest_cuda.txt
T="python3 -m attnrt.examples.train --device cuda --dtype bf16 --steps 200 --seqlen 1024 --batch 8 --quiet --arch llama --hidden 512 --layers 4 --heads 4"
for v in old new; do
  if [ $v = old ]; then use .gpu-py-old; else use .gpu-py; fi
  for impl in hf:sdpa flash_attention_2; do
    timeout 100 $T --attn_implementation $impl --csv $O/train_${v}_${impl/:/_}.csv > $O/train_${v}_${impl/:/_}.txt 2>&1
    echo "train $v $impl rc=$?"; tail -1 $O/train_${v}_${impl/:/_}.txt
  done
done
cd $O/.. && tar czf py.tgz py && rm -rf py
