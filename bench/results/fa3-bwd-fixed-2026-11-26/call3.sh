#!/usr/bin/env bash
# Issue 13: flash_attention_3 with its shared storage addressed as shared memory (LDS/STS, where
# the integer round trip of the 1 KB alignment left generic LD.E/ST.E) and the dQ accumulator
# zeroed by the D kernel (no cudaMemsetAsync), against main's plugins (.gpu/base, through
# ATTNRT_PLUGIN_PATH), alternated, around PyTorch's SDPA backends (torch_sdpa_anchors.py).
set -u
cd "$(dirname "$0")/../../../.gpu"
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
export LD_LIBRARY_PATH=$PWD/lib:$(py_lib nvidia.cudnn):$(py_lib nvidia.cublas):/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call3; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
B="attnrt.device=cuda --hdim 64,128 --seqlen 2048,4096,8192,16384 --mask both --backends flash_attention_3,sdpa"
run() {  # tag, plugin path (empty: this tree's)
  if [ -n "$2" ]; then
    ATTNRT_PLUGIN_PATH=$2 timeout 100 bin/attnrt bench $B --csv $O/bench_$1.csv > $O/bench_$1.txt 2>&1
  else
    timeout 100 bin/attnrt bench $B --csv $O/bench_$1.csv > $O/bench_$1.txt 2>&1
  fi
  echo "bench $1 rc=$?"
}
run new_1 ""
run base_1 $PWD/base
OUT=$O timeout 100 python3 torch_sdpa_anchors.py --no-flex --hdim 64,128 --seqlen 2048,4096,8192,16384 > $O/anchors.txt 2>&1
echo "anchors rc=$?"
run new_2 ""
run base_2 $PWD/base
ls $O
cd $O/.. && tar czf call3.tgz call3 && rm -rf call3
