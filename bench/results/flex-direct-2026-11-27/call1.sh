#!/usr/bin/env bash
# Issue 15, 2026-11-27 (third session), call 1: what last session compiled and never ran, run.
# (1) The flex GPU tests (eight shards, the plugin's own rule) on main d90e2c3's plugin, which
# holds bf10477/5a861d9 (the remembered tile height under capture, its slots) and 138412c/d90e2c3.
# (2) At once, the Python package (tools/gpu_stage_python.sh
# flex_attention_cuda): tests/python/test_torch_flex_cuda.py (a flex forward, and a forward +
# backward, captured into CUDA graphs, with a block mask rewritten between replays) and
# test_flex.py's CUDA cases. (3) Then the host's side of a forward at S2048 hd64: the plugin built
# with timing probes in forward() (variants/probe: /tmp/probe's copy of flex_cuda_plugin.cpp),
# causal and the 90% sparse mask, under the plugin's rule and forced to 128 and 192 rows.
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
  py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
  export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64 PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 ATTNRT_CACHE_DIR=/tmp/fc_py
  cd .. && timeout 400 python3 -m pytest -q -p no:cacheprovider tests/python/test_torch_flex_cuda.py \
    "tests/python/test_flex.py::test_cuda_matches_the_fp64_reference" > $O/pytest_flex_cuda.txt 2>&1
  echo "pytest rc=$?" >> $O/pytest_flex_cuda.txt
) &
wait
echo "== tests: RUN $(cat $O/tests_*.txt | grep -c '^\[ RUN'), OK $(cat $O/tests_*.txt | grep -c '^\[       OK'), SKIPPED $(cat $O/tests_*.txt | grep -c '^\[  SKIPPED \]'), FAILED $(cat $O/tests_*.txt | grep -c '^\[  FAILED  \]')"
grep -h "^\[  FAILED  \]\|Failure" $O/tests_*.txt | head -10
tail -5 $O/pytest_flex_cuda.txt
# (3) Host probes: [1] use_device, [2] module(), [3] params + workspace, [4] hopper modules + rows,
# [5] the remembered choice, [6] kernel_params (the block-state launch is [10]), [7] hopper_forward
# ([8] its tensor maps, [9] its launch), [0] forward() in all.
for rows in rule 128 192; do
  for mod in causal block_sparse_90; do
    r=$rows; [ $r = rule ] && r=
    ATTNRT_FLEX_ROWS=$r ATTNRT_PLUGIN_PATH=$PWD/variants/probe ATTNRT_CACHE_DIR=/tmp/fc_probe timeout 120 \
      bin/attnrt_flex_bench --hdim 64 --seqlen 2048 --mods $mod --backward 0 --reps 30 --csv $O/probe_${rows}_$mod.csv \
      > $O/probe_${rows}_$mod.txt 2>&1
    echo "== probe rows=$rows $mod: $(grep -h "^flex_attention,$mod" $O/probe_${rows}_$mod.csv | cut -d, -f7,10)"
    grep -h "host probe" $O/probe_${rows}_$mod.txt
  done
done
