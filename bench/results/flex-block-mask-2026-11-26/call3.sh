#!/usr/bin/env bash
# Issue 15, call 3: create_block_mask's speed on the GPU against PyTorch 2.11's create_block_mask
# (eager default and _compile=True), same mods (causal, sliding window 256, prefix LM, document
# mask from an aux tensor, 90%-block-sparse), B = H = 1, 128 x 128 blocks, S 8192 / 32768 /
# 131072: attnrt_flex_bench --block-mask 1 (its lists compared with the host's classification up
# to 8k) and torch_flex_anchors.py --block-mask in the same call.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call3
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call3; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
timeout 200 bin/attnrt_flex_bench --seqlen 8192,32768,131072 --block-mask 1 --csv $O/attnrt_block_mask.csv > $O/attnrt_block_mask.txt 2>&1
echo "attnrt rc=$?"; cat $O/attnrt_block_mask.csv
timeout 300 python3 torch_flex_anchors.py --seqlen 8192,32768,131072 --block-mask --csv $O/anchors_block_mask.csv > $O/anchors_block_mask.txt 2>&1
echo "torch rc=$?"; cat $O/anchors_block_mask.csv; tail -3 $O/anchors_block_mask.txt
cd $O/.. && tar czf call3.tgz call3 && rm -rf call3
