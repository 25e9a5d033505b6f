#!/usr/bin/env bash
# Issues 13 and 15: (a) sustained backward throughput (bench/python/sustained.py: back to back for
# 3 s against triton's do_bench, nvidia-smi sampling the SM clock and power) of flash_attention_3
# and PyTorch's cuDNN at hd128 S4096/S16384, where call 7's back-to-back profile (S16384: 11.7 ms
# against 10.2 ms) disagreed with attnrt bench's call-by-call figure (10.1 ms against 10.2-10.4);
# (b) PyTorch's compiled flex on call 7's flex shapes (torch_flex_anchors.py --mods), joined to
# call 7's rounds by flex_ratios.py.
set -u
cd "$(dirname "$0")/../../.."
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
CUDNN_LIBS=$(py_lib nvidia.cudnn):$(py_lib nvidia.cublas)
O=${OUT:-/tmp/o}/call8; mkdir -p $O
chmod -R go-w .gpu .gpu-py 2>/dev/null
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
nvidia-smi -q -d POWER,CLOCK > $O/smi_q.txt 2>&1
LD_LIBRARY_PATH=$PWD/.gpu-py/lib:$CUDNN_LIBS:/usr/local/cuda/lib64 PYTHONPATH=$PWD/.gpu-py/python OUT=$O \
  timeout 200 python3 bench/python/sustained.py --hdim 128 --seqlen 4096,16384 --mask full > $O/sustained.txt 2>&1
echo "sustained rc=$?"; grep -o "'case.*tflops_sustained': [0-9.]*" $O/sustained.txt
cd .gpu
A="--hdim 128,64 --seqlen 8192,16384 --mods sliding_window_256,document_mask,alibi,block_sparse_90"
timeout 250 python3 torch_flex_anchors.py $A --backward --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1; echo "torch rc=$?"
cd $O/.. && tar czf call8.tgz call8 && rm -rf call8
