#!/usr/bin/env bash
# Issue 18, call 2: transformers' eager against its sdpa on the same Llama run (the bf16 noise
# between two correct implementations, to read call 1's attnrt-vs-sdpa differences against), and
# all of call 1's training CSVs again in one tar (the tool returns a limited number of files).
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
export LD_LIBRARY_PATH=$PWD/lib:$(py_lib nvidia.cudnn):$(py_lib nvidia.cublas):/usr/local/cuda/lib64:$LD_LIBRARY_PATH
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
O=${OUT:-/tmp/o}; R=/tmp/runs; mkdir -p $O $R
T="python3 -m attnrt.examples.train --device cuda --dtype bf16 --steps 200 --seqlen 1024 --batch 8 --quiet"
for impl in hf:sdpa hf:eager sdpa flash_attention_2 flash_attention_3 eager; do
  timeout 150 $T --arch llama --hidden 512 --layers 4 --heads 4 --attn_implementation $impl \
    --csv $R/train_llama_${impl/:/_}.csv >> $R/train.txt 2>&1 || echo "llama $impl rc=$?"
done
python3 summary.py $R > $R/summary.txt 2>&1; cat $R/summary.txt
tar -C $R -czf $O/runs.tar.gz .
