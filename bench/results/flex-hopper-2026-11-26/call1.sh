#!/usr/bin/env bash
# Issue 15, call 1: the Hopper forward (flash_attention_3's, linked with the mods by nvJitLink).
# Every flex GPU test (the forward through both kernels, ATTNRT_FLEX_FORWARD), flash_attention_3's
# edge grid and the sink grids (their kernels' body moved into forward_body), then the flex forward
# bench with each kernel (attnrt_flex_bench, bf16, batch 2, 16 heads, S8192).
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call1
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
timeout 60 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192 --csv $O/flex_bench_hopper.csv > $O/flex_bench_hopper.txt 2>&1
echo "flex bench hopper rc=$?"; cat $O/flex_bench_hopper.txt | tail -25
ATTNRT_FLEX_FORWARD=flash_attention_2 timeout 50 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192 --csv $O/flex_bench_fa2.csv > $O/flex_bench_fa2.txt 2>&1
echo "flex bench fa2 rc=$?"; cat $O/flex_bench_fa2.txt | tail -25
timeout 300 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.*:FlexGpuRefusals.*' > $O/flex_tests.txt 2>&1
echo "flex tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/flex_tests.txt | head -30
timeout 100 bin/attnrt_gpu_tests --gtest_filter='Edge/FlashAttention3.*:Sink/SinkGrid.*:FlashAttention3Support.*' > $O/fa3_sink.txt 2>&1
echo "fa3/sink rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/fa3_sink.txt | head -10
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
