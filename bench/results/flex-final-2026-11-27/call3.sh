#!/usr/bin/env bash
# Issue 15, 2026-11-27 (ninth session), call 3, on main e42e110 as staged by tools/gpu_stage.sh:
# the two S2048 bars that are timed pipelined (calls enqueued back to back): causal as a mask_mod
# against flash_attention_3's causal, and the 90%-sparse block mask against dense; three rounds,
# forward, hd64 and hd128, S2048 and S8192. Then a call shape's prepare time from an emptied
# kernel cache (cold: NVRTC and nvJitLink) and again in a new process (warm: the disk cache).
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call3; mkdir -p $O
trap 'cd $O/.. && tar czf call3.tgz call3 && rm -rf call3' EXIT
nvidia-smi -L > $O/gpu.txt
for r in 1 2 3; do
  for hd in 64 128; do
    ATTNRT_CACHE_DIR=/tmp/fc timeout 120 bin/attnrt_flex_bench --hdim $hd --seqlen 2048,8192 \
      --mods causal,dense,block_sparse_90 --backward 0 --reps 20 --csv $O/hd${hd}_$r.csv > $O/hd${hd}_$r.txt 2>&1
    echo "== round $r hd$hd"
    grep -h "^flex_attention,\|^flash_attention_3,causal_builtin" $O/hd${hd}_$r.csv | cut -d, -f1,2,5,10 | sed 's/prepare [0-9.]* ms; host [0-9.]* us; //'
  done
done
for pass in cold warm; do
  for hd in 64 128; do
    ATTNRT_CACHE_DIR=/tmp/fc_prepare timeout 120 bin/attnrt_flex_bench --hdim $hd --seqlen 2048 --mods causal,alibi \
      --backward 1 --reps 1 --csv $O/prepare_${pass}_hd$hd.csv > $O/prepare_${pass}_hd$hd.txt 2>&1
    echo "== prepare $pass hd$hd: $(grep -h '^flex_attention,' $O/prepare_${pass}_hd$hd.csv | cut -d, -f2,10 | cut -d';' -f1 | tr '\n' ' ')"
  done
done
