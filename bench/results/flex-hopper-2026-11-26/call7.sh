#!/usr/bin/env bash
# Issue 15, call 7: the Hopper backward (flash_attention_3's dK/dV/dQ kernel under the flex
# policy, linked with the mods by nvJitLink). The bf16 hd128 backward tests (all three backward
# paths), then attnrt_flex_bench --backward 1 (S8192, hd128 and hd64) with the Hopper backward and
# with flash_attention_2's (ATTNRT_FLEX_BACKWARD), then torch_flex_anchors.py --backward.
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call7
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call7; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
timeout 150 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Backward*bf16_hd128*' > $O/flex_bwd_tests.txt 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]|errors \].*Hopper" $O/flex_bwd_tests.txt | head -30
timeout 170 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192 --backward 1 --csv $O/flex_bench.csv > $O/flex_bench.txt 2>&1
echo "bench rc=$?"; cat $O/flex_bench.csv
ATTNRT_FLEX_BACKWARD=flash_attention_2 timeout 60 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192 --backward 1 --csv $O/flex_bench_fa2.csv > $O/flex_bench_fa2.txt 2>&1
echo "bench fa2 rc=$?"; grep backward $O/flex_bench_fa2.csv
timeout 180 python3 torch_flex_anchors.py --hdim 128,64 --seqlen 8192 --backward --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1
echo "torch rc=$?"; cat $O/torch_flex.csv
cd $O/.. && tar czf call7.tgz call7 && rm -rf call7
