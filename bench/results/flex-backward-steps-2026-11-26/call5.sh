#!/usr/bin/env bash
# Issue 15: correctness of the final backward (fa3_backward.cuh: block-sparse walks loop over
# their visited steps by a broadcast count; flash_attention_3's own loop unchanged), in four
# gtest shards at once: every flex backward case (the Hopper backward and both
# flash_attention_2 dK/dV kernels) and the refusals; flash_attention_3's edge and deterministic
# cases and the sink grid; compute-sanitizer racecheck and synccheck on two flex backward cases
# (the Hopper kernel only); the Python package's flex_attention on CUDA (tests/python/test_flex.py
# -k cuda, the package staged by tools/gpu_stage_python.sh in .gpu-py).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call5; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
summary() { grep -hE "FAILED  \]" "$@" | head -20; echo "OK: $(cat "$@" | grep -c '^\[       OK')"; }
sharded() {  # name, filter, timeout: four shards at once, each with its own cache
  local name=$1 filter=$2 limit=$3
  for i in 0 1 2 3; do
    ATTNRT_CACHE_DIR=/tmp/attnrt_cache_$name$i GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i \
      timeout $limit bin/attnrt_gpu_tests --gtest_filter="$filter" > $O/${name}_$i.txt 2>&1 &
  done
  wait
  echo "== $name"; summary $O/${name}_*.txt; grep -h "tests ran\|PASSED\|FAILED\]" $O/${name}_*.txt | head -8
}
sharded flex_backward 'Mods/FlexGpu.Backward*:FlexGpuRefusals.*' 200
sharded fa3_sink 'Edge/FlashAttention3.*:Cases/FlashAttention3Deterministic.*:Sink/SinkGrid.*' 150
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for tool in racecheck synccheck; do
  ATTNRT_CACHE_DIR=/tmp/attnrt_cache_san timeout 100 $SAN --tool $tool --kernel-regex kns=attnrt_flex_hopper_backward \
    bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Backward*/bf16_hd128_random_block_sparse:Mods/FlexGpu.Backward*/bf16_hd64_block_causal_window_1k' \
    > $O/sanitizer_$tool.txt 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $O/sanitizer_$tool.txt | head -5
done
cd ..
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
LD_LIBRARY_PATH=$PWD/.gpu-py/lib:$(py_lib nvidia.cublas):/usr/local/cuda/lib64 PYTHONPATH=$PWD/.gpu-py/python \
  ATTNRT_CACHE_DIR=/tmp/attnrt_cache_py timeout 120 python3 -m pytest -q -p no:cacheprovider tests/python/test_flex.py -k cuda \
  > $O/pytest_flex_cuda.txt 2>&1
echo "pytest rc=$?"; tail -3 $O/pytest_flex_cuda.txt
cd $O/.. && tar czf call5.tgz call5 && rm -rf call5
