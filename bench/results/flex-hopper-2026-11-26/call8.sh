#!/usr/bin/env bash
# Issue 15, call 8: the Hopper backward with the block mask's steps read by every warp into a
# bitmask first. A smoke test (bf16 hd128 sliding window and block-sparse backward cases), then
# attnrt_flex_bench --backward 1 (S2048 and S8192, hd128 and hd64; both directions on Hopper),
# then the same with flash_attention_2's backward (ATTNRT_FLEX_BACKWARD), then
# torch_flex_anchors.py --backward on the same shapes.
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call8
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call8; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
timeout 60 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Backward*bf16_hd128_sliding*:Mods/FlexGpu.Backward*bf16_hd128_random*:Mods/FlexGpu.Backward*bf16_hd128_block_causal*' > $O/smoke.txt 2>&1
echo "smoke rc=$?"; grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $O/smoke.txt
timeout 200 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192,2048 --backward 1 --csv $O/flex_bench.csv > $O/flex_bench.txt 2>&1
echo "bench rc=$?"
ATTNRT_FLEX_BACKWARD=flash_attention_2 timeout 60 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192,2048 --backward 1 --csv $O/flex_bench_fa2.csv > $O/flex_bench_fa2.txt 2>&1
echo "bench fa2 rc=$?"
timeout 230 python3 torch_flex_anchors.py --hdim 128,64 --seqlen 8192,2048 --backward --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1
echo "torch rc=$?"
grep backward $O/flex_bench.csv | cut -d, -f2,5,6,7,8
cd $O/.. && tar czf call8.tgz call8 && rm -rf call8
