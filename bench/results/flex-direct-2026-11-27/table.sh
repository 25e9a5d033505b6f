#!/usr/bin/env bash
# Issue 15, 2026-11-27 (third session), calls 4 and 5 (`bash table.sh 4 128`, `bash table.sh 5 64`):
# every mod against PyTorch's compiled flex_attention in the same call, on the final plugin (main
# 16eda10), forward and backward, bf16, batch 2, 16 heads, S2048/8192/16384, at one head_dim.
# The kernel caches are filled first by one-rep benches (three processes at once); then
# attnrt_flex_bench, then torch_flex_anchors.py with the same arguments, then flex_ratios.py.
set -u
N=$1 HD=$2
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call$N; mkdir -p $O
trap "cd $O/.. && tar czf call$N.tgz call$N && rm -rf call$N" EXIT
nvidia-smi -L > $O/gpu.txt
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name())" > $O/versions.txt 2>&1
for mods in causal,sliding_window_256,prefix_lm document_mask,alibi,softcap relative_bias,dense,block_sparse_90; do
  ATTNRT_CACHE_DIR=/tmp/fc timeout 150 bin/attnrt_flex_bench --hdim $HD --seqlen 2048 --mods $mods --backward 1 \
    --reps 1 > $O/warm_${mods//,/_}.txt 2>&1 &
done
wait
A="--hdim $HD --seqlen 2048,8192,16384"
ATTNRT_CACHE_DIR=/tmp/fc timeout 200 bin/attnrt_flex_bench $A --backward 1 --reps 10 --csv $O/flex_hd$HD.csv \
  > $O/flex_hd$HD.txt 2>&1; echo "attnrt rc=$?"
timeout 330 python3 torch_flex_anchors.py $A --backward --csv $O/torch_hd$HD.csv > $O/torch_hd$HD.txt 2>&1
echo "torch rc=$?"
python3 flex_ratios.py $O/flex_hd$HD.csv $O/torch_hd$HD.csv > $O/ratios_hd$HD.md 2>&1; cat $O/ratios_hd$HD.md
grep -h "causal_builtin\|^flex_attention,causal\|^flex_attention_backward,causal" $O/flex_hd$HD.csv | cut -d, -f1,2,5,7
