#!/usr/bin/env bash
# Issue 15, call 4 (call 3 again, the torch script's backward rows fixed; the same staged .gpu/): flex_attention's forward and backward on CUDA against
# PyTorch's compiled flex_attention, same mods, shapes and block masks, in one call (bf16, batch 2,
# 16 heads, S8192, hd128 and hd64): attnrt_flex_bench twice (the first on an empty kernel cache:
# its prepare column is the cold NVRTC compile, the second's the warm load), then
# torch_flex_anchors.py --backward.
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call4
rm -rf $ATTNRT_CACHE_DIR
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call4; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
for r in cold warm; do
  timeout 150 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192 --backward 1 --csv $O/flex_bench_$r.csv > $O/flex_bench_$r.txt 2>&1
  echo "flex bench $r rc=$?"
done
cat $O/flex_bench_warm.txt
timeout 330 python3 torch_flex_anchors.py --hdim 128,64 --seqlen 8192 --backward --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1
echo "torch anchors rc=$?"; cat $O/torch_flex.csv
cd $O/.. && tar czf call4.tgz call4 && rm -rf call4
