#!/usr/bin/env bash
# Issue 15, 2026-11-27 (fourth session), call 1 (main 26b668f). (1) The flex GPU tests, eight
# shards, and the Python CUDA tests: b03a614's HandWrittenListsMeanWhatTheContractSays and
# b716cc7's helper run for the first time. (2) Nsight Compute's duration of every kernel of the
# S2048 hd64 forward rows (causal, dense, block_sparse_90, and the built-in causal of
# flash_attention_3), one rep each: where the fixed cost of a short call goes.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . ../.gpu-py 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
trap 'cd $O/.. && tar czf call1.tgz call1 && rm -rf call1' EXIT
nvidia-smi -L > $O/gpu.txt
FLEX='Mods/FlexGpu.*:FlexGpuRefusals.*:FlexGpuBlockMask.*'
for i in 0 1 2 3 4 5 6 7; do
  OMP_NUM_THREADS=1 ATTNRT_CACHE_DIR=/tmp/fc_t$i GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i \
    timeout 420 bin/attnrt_gpu_tests --gtest_filter="$FLEX" > $O/tests_$i.txt 2>&1 &
done
(
  cd ../.gpu-py
  export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 ATTNRT_CACHE_DIR=/tmp/fc_py
  cd .. && timeout 300 python3 -m pytest -q -p no:cacheprovider tests/python/test_torch_flex_cuda.py \
    "tests/python/test_flex.py::test_cuda_matches_the_fp64_reference" > $O/pytest_flex_cuda.txt 2>&1
  echo "pytest rc=$?" >> $O/pytest_flex_cuda.txt
) &
# Warm the kernel cache meanwhile, so that ncu below profiles no compile.
ATTNRT_CACHE_DIR=/tmp/fc_n timeout 300 bin/attnrt_flex_bench --hdim 64 --seqlen 2048 \
  --mods causal,dense,block_sparse_90 --backward 0 --reps 1 > $O/warm.txt 2>&1 &
wait
echo "== tests: RUN $(cat $O/tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/tests_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "HandWritten" $O/tests_*.txt | head -5
grep -h "^\[  FAILED  \]\|Failure" $O/tests_*.txt | head -10
tail -3 $O/pytest_flex_cuda.txt
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
ATTNRT_CACHE_DIR=/tmp/fc_n timeout 240 $NCU --clock-control none --csv --launch-count 600 \
  --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size \
  bin/attnrt_flex_bench --hdim 64 --seqlen 2048 --mods causal,dense,block_sparse_90 --backward 0 --reps 1 \
  > $O/ncu.csv 2> $O/ncu.err
echo "ncu rc=$? lines=$(wc -l < $O/ncu.csv)"
python3 - $O/ncu.csv > $O/ncu_runs.txt <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; rows = rows[1:]
I = {k: h.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Value")}
k = collections.OrderedDict()
for r in rows:
    key = r[I["ID"]]
    k.setdefault(key, {"name": r[I["Kernel Name"]][:60]})[r[I["Metric Name"]]] = r[I["Metric Value"]]
# in launch order, runs of the same (kernel, grid, block) collapsed: count, median and first us
runs = []
for v in k.values():
    sig = (v["name"], v.get("launch__grid_size"), v.get("launch__block_size"))
    d = float(v.get("gpu__time_duration.sum", "0").replace(",", ""))
    if runs and runs[-1][0] == sig: runs[-1][1].append(d)
    else: runs.append((sig, [d]))
print("unit:", [r[h.index("Metric Unit")] for r in rows if r[I["Metric Name"]] == "gpu__time_duration.sum"][:1])
for sig, d in runs:
    print(sig, len(d), "median", sorted(d)[len(d)//2], "first", d[:4])
PY

head -120 $O/ncu_runs.txt
