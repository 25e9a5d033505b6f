#!/usr/bin/env bash
# Issue 18 on the H100: attnrt.torch's host time per call before (python/attnrt/torch.py of
# 571747d, every call through the custom op) and after (eager calls skip the dispatcher), same
# package otherwise (the cp312 abi3 wheel staged as .gpu-py/, see ../../python-2026-11-25/),
# alternated twice: python3 bench/python/torch_overhead.py --device cuda.
cd "$(dirname "$0")"
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
export LD_LIBRARY_PATH=$PWD/lib:$(py_lib nvidia.cudnn):$(py_lib nvidia.cublas):/usr/local/cuda/lib64:$LD_LIBRARY_PATH
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
O=${OUT:-/tmp/o}/py; mkdir -p $O
chmod -R go-w . 2>/dev/null
for r in 1 2; do
  for v in before after; do
    cp torch_$v.py python/attnrt/torch.py
    timeout 100 python3 ../bench/python/torch_overhead.py --csv $O/overhead_${v}_$r.csv > $O/overhead_${v}_$r.txt 2>&1
    echo "overhead $v $r rc=$?"; tail -12 $O/overhead_${v}_$r.txt
  done
done
cd ${OUT:-/tmp/o} && tar czf py.tgz py && rm -rf py
