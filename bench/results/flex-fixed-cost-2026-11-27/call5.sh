#!/usr/bin/env bash
# Issue 15, call 5 (plugin of main 26b668f; bench with the new `block_causal` mod): what the
# diagonal blocks' mask_mod costs. `block_causal` lists the causal mask's blocks, every one full
# (the diagonal blocks whole), so mask_mod is never evaluated; against `causal` it prices the
# diagonal's mask_mod, against flash_attention_3's causal the rest. hd64 and hd128, S2048 and
# S8192, forward, three rounds.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call5; mkdir -p $O
trap 'cd $O/.. && tar czf call5.tgz call5 && rm -rf call5' EXIT
nvidia-smi -L > $O/gpu.txt
export ATTNRT_CACHE_DIR=/tmp/fc5
for hd in 64 128; do
  timeout 200 bin/attnrt_flex_bench --hdim $hd --seqlen 2048 --mods causal,block_causal --backward 0 --reps 1 > $O/warm_$hd.txt 2>&1
done
for r in 1 2 3; do
  for hd in 64 128; do
    timeout 120 bin/attnrt_flex_bench --hdim $hd --seqlen 2048,8192 --mods causal,block_causal --backward 0 --reps 20 \
      --csv $O/hd${hd}_$r.csv > $O/hd${hd}_$r.txt 2>&1
    echo "== hd$hd round $r"; grep -h "^flex_attention,\|flash_attention_3,causal" $O/hd${hd}_$r.csv | cut -d, -f1,2,5,7,10 | sed 's/prepare [0-9.]* ms; //'
  done
done
