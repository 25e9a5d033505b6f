#!/usr/bin/env bash
# Issue 15, call 2: the Hopper forward with the block-mask walk read by a warp (32 key blocks at
# once). attnrt_flex_bench (forward, bf16, batch 2, 16 heads, S2048 and S8192, hd128 and hd64)
# with the Hopper kernel and with flash_attention_2's (ATTNRT_FLEX_FORWARD=flash_attention_2), then
# PyTorch's compiled flex_attention on the same mods and shapes (torch_flex_anchors.py).
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call2
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call2; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
timeout 220 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192,2048 --csv $O/flex_bench_hopper.csv > $O/flex_bench_hopper.txt 2>&1
echo "flex bench hopper rc=$?"; cat $O/flex_bench_hopper.csv
ATTNRT_FLEX_FORWARD=flash_attention_2 timeout 100 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192,2048 --csv $O/flex_bench_fa2.csv > $O/flex_bench_fa2.txt 2>&1
echo "flex bench fa2 rc=$?"
timeout 240 python3 torch_flex_anchors.py --hdim 128,64 --seqlen 8192,2048 --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1
echo "torch anchors rc=$?"; cat $O/torch_flex.csv
cd $O/.. && tar czf call2.tgz call2 && rm -rf call2
