#!/usr/bin/env bash
# Issue 15, call 4: the committed flex_attention (Hopper forward, per-call lookup without hashing)
# against PyTorch's compiled flex_attention, forward: attnrt_flex_bench (bf16, batch 2, 16 heads,
# hd128 and hd64, S2048, 8192 and 16384), then torch_flex_anchors.py on the same mods and shapes,
# then attnrt_flex_bench with flash_attention_2's forward (ATTNRT_FLEX_FORWARD) at S8192.
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call4
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call4; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
timeout 230 bin/attnrt_flex_bench --hdim 128,64 --seqlen 2048,8192,16384 --csv $O/flex_bench.csv > $O/flex_bench.txt 2>&1
echo "flex bench rc=$?"
timeout 260 python3 torch_flex_anchors.py --hdim 128,64 --seqlen 2048,8192,16384 --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1
echo "torch anchors rc=$?"
ATTNRT_FLEX_FORWARD=flash_attention_2 timeout 60 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192 --csv $O/flex_bench_fa2.csv > $O/flex_bench_fa2.txt 2>&1
echo "flex bench fa2 rc=$?"
cd $O/.. && tar czf call4.tgz call4 && rm -rf call4
