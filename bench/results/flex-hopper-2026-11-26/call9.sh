#!/usr/bin/env bash
# Issue 15, call 9: the committed tree (the Hopper backward's bitmask walk taking the next step by
# the walk's counters where none is skipped). Every flex backward test (44 cases, each through
# the Hopper backward and flash_attention_2's two dK/dV kernels) and the bf16 hd64 forward tests;
# then attnrt_flex_bench --backward 1 at S8192 (hd128, hd64) with the Hopper backward and with
# flash_attention_2's, then torch_flex_anchors.py --backward on the same shapes; then
# flash_attention_3's own backward tests (edge grid, hd128) and the sink grid.
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call9
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call9; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
timeout 270 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Backward*:Mods/FlexGpu.Forward*bf16_hd64*:FlexGpuRefusals.*' > $O/flex_tests.txt 2>&1
echo "flex tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/flex_tests.txt | head -20
timeout 130 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192 --backward 1 --csv $O/flex_bench.csv > $O/flex_bench.txt 2>&1
echo "bench rc=$?"
ATTNRT_FLEX_BACKWARD=flash_attention_2 timeout 40 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192 --backward 1 --csv $O/flex_bench_fa2.csv > $O/flex_bench_fa2.txt 2>&1
echo "bench fa2 rc=$?"
timeout 130 python3 torch_flex_anchors.py --hdim 128,64 --seqlen 8192 --backward --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1
echo "torch rc=$?"
grep backward $O/flex_bench.csv | cut -d, -f2,5,6,7,8
timeout 40 bin/attnrt_gpu_tests --gtest_filter='Edge/FlashAttention3.*hd128*:Sink/SinkGrid.*' > $O/fa3_sink.txt 2>&1
echo "fa3/sink rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/fa3_sink.txt | head -5; grep -c "^\[       OK" $O/fa3_sink.txt
cd $O/.. && tar czf call9.tgz call9 && rm -rf call9
