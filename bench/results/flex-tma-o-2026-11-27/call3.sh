#!/usr/bin/env bash
# Issue 15, 2026-11-27 (seventh session), call 3: on call 1's tmao, what the block-state kernel
# before the forward costs a call. st1024: that kernel in blocks of 1024 threads (16 CTAs at batch
# 2, 16 heads, S2048, where 128-thread blocks took 64 SMs that the forward's CTAs, which need a
# whole SM's registers, could not start on before it ended). early1024: st1024, and the forward's
# CTAs set up their barriers and load their first tile's Q beside that kernel (the scheduling
# warp alone waits for it: bench/results/flex-fixed-cost-2026-11-27's early_start.patch).
# nostate: a diagnostic, never to be kept: after a block mask's first call the states are taken
# as still valid and only the tile counter is zeroed (a memset, as flash_attention_3's), which
# bounds what the state kernel costs. Forward, hd64 and hd128, S2048 and S8192, three rounds
# alternated; no tests.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call3; mkdir -p $O
trap 'cd $O/.. && tar czf call3.tgz call3 && rm -rf call3' EXIT
nvidia-smi -L > $O/gpu.txt
VARS="tmao st1024 nostate early1024"
MODS=causal,dense,block_sparse_90,sliding_window_256,document_mask
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
        --seqlen 2048,8192 --mods $MODS --backward 0 --reps 20 --csv $O/${v}_hd${hd}_$r.csv > $O/${v}_hd${hd}_$r.txt 2>&1
    done
  done
  echo "== round $r ($SECONDS s)"
done
T=../bench/results/flex-lists-2026-11-27/table.py
python3 $T $O 2048 2>/dev/null || true
python3 $T $O 8192 2>/dev/null || true
