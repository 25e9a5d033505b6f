#!/usr/bin/env bash
# Issue 15: the flex backward with the consumers' step loop uniform (visited steps counted and
# broadcast by a shuffle, each step's query block read from the producer's stage, the partial
# tiles' select under the mask flag) against main's plugins (.gpu/base, first in
# ATTNRT_PLUGIN_PATH), and PyTorch's compiled flex in the same call:
#   new, all mods, hd128 and hd64, S8192, forward and backward, 20 timed calls a median;
#   base, hd128, the seven mods below, then PyTorch's anchors (torch_flex_anchors.py);
#   a second round of both at hd128 (warm caches).
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_steps3
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call3; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
MODS="--mods causal,dense,sliding_window_256,document_mask,alibi,prefix_lm,block_sparse_90"
timeout 170 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192 --backward 1 --reps 20 --csv $O/new_1.csv > $O/new_1.txt 2>&1; echo "new 1 rc=$?"
ATTNRT_PLUGIN_PATH=$PWD/base timeout 100 bin/attnrt_flex_bench --hdim 128 --seqlen 8192 --backward 1 --reps 20 $MODS --csv $O/base_1.csv > $O/base_1.txt 2>&1; echo "base 1 rc=$?"
timeout 150 python3 torch_flex_anchors.py --hdim 128,64 --seqlen 8192 --backward --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1; echo "torch rc=$?"
timeout 60 bin/attnrt_flex_bench --hdim 128 --seqlen 8192 --backward 1 --reps 20 $MODS --csv $O/new_2.csv > $O/new_2.txt 2>&1; echo "new 2 rc=$?"
ATTNRT_PLUGIN_PATH=$PWD/base timeout 60 bin/attnrt_flex_bench --hdim 128 --seqlen 8192 --backward 1 --reps 20 $MODS --csv $O/base_2.csv > $O/base_2.txt 2>&1; echo "base 2 rc=$?"
for f in new_1 base_1 new_2 base_2; do echo "== $f"; grep backward $O/$f.csv | cut -d, -f1,2,6,7,8; done
python3 flex_ratios.py $O/new_1.csv $O/torch_flex.csv > $O/ratios_new_1.md 2>&1; cat $O/ratios_new_1.md
cd $O/.. && tar czf call3.tgz call3 && rm -rf call3
