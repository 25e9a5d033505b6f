#!/usr/bin/env bash
# Issue 15, call 3: the committed kernels with the module lookup that no longer hashes the
# embedded sources per call. Every flex GPU test (forward through both kernels, backward through
# both dK/dV kernels; four shards in parallel, the CPU reference being the slow part), beside
# flash_attention_3's edge grid, its support tests and the sink grid; then the forward bench at
# S2048 hd128 with each kernel (the per-call host time that call 2 showed as a ~0.2 ms floor).
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call3
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call3; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 280 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.*:FlexGpuRefusals.*' > $O/flex_tests_$i.txt 2>&1 &
done
timeout 280 bin/attnrt_gpu_tests --gtest_filter='Edge/FlashAttention3.*:FlashAttention3Support.*:Sink/SinkGrid.*:Cases/FlashAttention3Paged.*' > $O/fa3_sink.txt 2>&1 &
wait
for f in $O/flex_tests_*.txt $O/fa3_sink.txt; do echo "$f"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $f | head -12; done
timeout 80 bin/attnrt_flex_bench --hdim 128 --seqlen 2048 --csv $O/flex_bench_hopper_2k.csv > $O/flex_bench_hopper_2k.txt 2>&1
echo "bench hopper rc=$?"; cat $O/flex_bench_hopper_2k.csv
ATTNRT_FLEX_FORWARD=flash_attention_2 timeout 40 bin/attnrt_flex_bench --hdim 128 --seqlen 2048 --csv $O/flex_bench_fa2_2k.csv > $O/flex_bench_fa2_2k.txt 2>&1
echo "bench fa2 rc=$?"; cat $O/flex_bench_fa2_2k.csv
cd $O/.. && tar czf call3.tgz call3 && rm -rf call3
