#!/usr/bin/env bash
# Issue 15, call 6 (call 5's .gpu/, plus variants/{old,new}/flash_attention_2: the plugin of
# c7d6b03 and this tree's): flash_attention_2's backward before and after the dK/dV loop change,
# alternated twice; then flex_attention's forward and backward against PyTorch's compiled
# flex_attention at S8192 and S2048, hd128 and hd64 (attnrt_flex_bench --backward 1, then
# torch_flex_anchors.py --backward; bf16, batch 2, 16 heads).
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call6
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call6; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
for r in 1 2; do
  for v in new old; do
    ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 60 bin/attnrt bench attnrt.device=cuda --backends flash_attention_2 \
      --hdim 64,128 --seqlen 2048,8192 --no-forward --csv $O/fa2_backward_${v}_$r.csv > $O/fa2_backward_${v}_$r.txt 2>&1
    echo "fa2 backward $v $r rc=$?"
  done
done
timeout 200 bin/attnrt_flex_bench --hdim 128,64 --seqlen 8192,2048 --backward 1 --csv $O/flex_bench.csv > $O/flex_bench.txt 2>&1
echo "flex bench rc=$?"
timeout 280 python3 torch_flex_anchors.py --hdim 128,64 --seqlen 8192,2048 --backward --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1
echo "torch anchors rc=$?"
cd $O/.. && tar czf call6.tgz call6 && rm -rf call6
