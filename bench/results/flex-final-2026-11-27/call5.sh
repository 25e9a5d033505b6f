#!/usr/bin/env bash
# Issue 15, 2026-11-27 (ninth session), call 5: a diagnostic, not a candidate. `nowait`
# (nowait.patch on e42e110) lets the flex Hopper forward start its first tile without waiting for
# the block-state kernel: only the scheduling warp's first claim waits for it. The first walk then
# reads states that kernel may still be writing. In the bench every call writes the same states,
# so the times are right and the results are too, but a real change would have to build the first
# walk from the lists. So this bounds what that change could gain. main (variants/main, the staged
# plugin) against nowait, alternated, three rounds, forward, S2048.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call5; mkdir -p $O
trap 'cd $O/.. && tar czf call5.tgz call5 && rm -rf call5' EXIT
nvidia-smi -L > $O/gpu.txt
VARS="main nowait"
MODS=causal,dense,block_sparse_90,document_mask
path() { echo $PWD/variants/$1; }
for v in $VARS; do
  ATTNRT_PLUGIN_PATH=$(path $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 250 bin/attnrt_flex_bench --hdim 64,128 \
    --seqlen 2048 --mods $MODS --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
echo "warm done $SECONDS s"; grep -il "error\|fail" $O/warm_* | head
for r in 1 2 3; do
  for hd in 64 128; do
    for v in $VARS; do
      ATTNRT_PLUGIN_PATH=$(path $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 100 bin/attnrt_flex_bench --hdim $hd \
        --seqlen 2048 --mods $MODS --backward 0 --reps 20 --csv $O/${v}_hd${hd}_$r.csv > $O/${v}_hd${hd}_$r.txt 2>&1
      echo "== $v hd$hd round $r: $(grep -h '^flex_attention,\|^flash_attention_3,causal' $O/${v}_hd${hd}_$r.csv | sed 's/.*,\([a-z_0-9]*\),2,16,2048,.*pipelined \([0-9.]*\) ms/\1 \2/' | tr '\n' ' ')"
    done
  done
done
