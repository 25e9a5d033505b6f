#!/usr/bin/env bash
# Issue 18 on the H100: the Python package (a cp312 abi3 wheel built here, CPU plugins inside, the
# CUDA plugins copied beside them: flash_attention_2 and sink with every head_dim, the others from
# the reduced build), then (1) tests/python/test_torch_cuda.py: CUDA-graph capture and replay of a
# forward+backward, two streams at once, against torch's SDPA; (2) host time per call
# (bench/python/torch_overhead.py); (3) the training example, 200 steps bf16, each attnrt
# implementation against transformers' own, same seed; summary.py compares the loss curves.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
export LD_LIBRARY_PATH=$PWD/lib:$(py_lib nvidia.cudnn):$(py_lib nvidia.cublas):/usr/local/cuda/lib64:$LD_LIBRARY_PATH
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
O=${OUT:-/tmp/o}; mkdir -p $O
python3 -c "import torch, transformers, sys; print(sys.version.split()[0], torch.__version__, transformers.__version__, torch.cuda.get_device_name())" > $O/versions.txt 2>&1
cat $O/versions.txt
(cd .. && timeout 200 python3 -m pytest -q -p no:cacheprovider tests/python/test_torch_cuda.py tests/python/test_hf_gptoss.py \
  > $O/pytest_cuda.txt 2>&1); echo "pytest rc=$?"; tail -4 $O/pytest_cuda.txt
timeout 120 python3 ../bench/python/torch_overhead.py --csv $O/overhead.csv > $O/overhead.txt 2>&1; echo "overhead rc=$?"; cat $O/overhead.txt | tail -8
T="python3 -m attnrt.examples.train --device cuda --dtype bf16 --steps 200 --seqlen 1024 --batch 8 --quiet"
for impl in hf:sdpa sdpa flash_attention_2 flash_attention_3 eager; do
  timeout 150 $T --arch llama --hidden 512 --layers 4 --heads 4 --attn_implementation $impl \
    --csv $O/train_llama_${impl/:/_}.csv >> $O/train.txt 2>&1 || echo "llama $impl rc=$?"
done
for impl in hf:eager sink sdpa; do
  timeout 150 $T --arch gptoss --hidden 256 --layers 2 --heads 4 --attn_implementation $impl \
    --csv $O/train_gptoss_${impl/:/_}.csv >> $O/train.txt 2>&1 || echo "gptoss $impl rc=$?"
done
grep -v "^\[transformers\]" $O/train.txt | tail -12
python3 summary.py $O > $O/summary.txt 2>&1; cat $O/summary.txt
