#!/usr/bin/env bash
# Issues 13 and 15 on the committed kernels: (a) call 1's per-kernel breakdown of the hd128
# backward again (attnrt.torch from .gpu-py/, this tree's flash_attention_3); (b) flex_attention,
# whose Hopper kernels share flash_attention_3's bodies, against main's flex_attention_cuda plugin
# (.gpu/base, through ATTNRT_PLUGIN_PATH), alternated, on the mods and shapes short of issue 15's
# bars in fa3-uniform-2026-11-26 call 4, PyTorch's compiled flex on the same
# shapes in call 8 (flex_ratios.py).
set -u
cd "$(dirname "$0")/../../.."
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
CUDNN_LIBS=$(py_lib nvidia.cudnn):$(py_lib nvidia.cublas)
O=${OUT:-/tmp/o}/call7; mkdir -p $O
chmod -R go-w .gpu .gpu-py 2>/dev/null
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
LD_LIBRARY_PATH=$PWD/.gpu-py/lib:$CUDNN_LIBS:/usr/local/cuda/lib64 PYTHONPATH=$PWD/.gpu-py/python OUT=$O \
  timeout 120 python3 bench/python/backward_kernels.py --hdim 128 --seqlen 2048,4096,8192,16384 --mask full > $O/breakdown.txt 2>&1
echo "breakdown rc=$?"; grep span $O/breakdown.txt
cd .gpu
export LD_LIBRARY_PATH=$PWD/lib:$CUDNN_LIBS:/usr/local/cuda/lib64
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_fixed7
A="--hdim 128,64 --seqlen 8192,16384 --mods sliding_window_256,document_mask,alibi,block_sparse_90"
for r in 1 2; do  # the first round compiles each plugin's modules (about 6 s a mod and head_dim)
  t=$([ $r = 1 ] && echo 150 || echo 100)
  timeout $t bin/attnrt_flex_bench $A --backward 1 --reps 10 --csv $O/flex_new_$r.csv > $O/flex_new_$r.txt 2>&1; echo "new $r rc=$?"
  ATTNRT_PLUGIN_PATH=$PWD/base timeout $t bin/attnrt_flex_bench $A --backward 1 --reps 10 --csv $O/flex_base_$r.csv \
    > $O/flex_base_$r.txt 2>&1; echo "base $r rc=$?"
done
cd $O/.. && tar czf call7.tgz call7 && rm -rf call7
