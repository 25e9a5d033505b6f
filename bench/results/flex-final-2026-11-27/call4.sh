#!/usr/bin/env bash
# Issue 15, 2026-11-27 (ninth session), call 4: call 3's prepare times again, on a kernel cache
# emptied first and listed before and after each step (call 3's cold pass read 0.16-0.20 s, too
# short for NVRTC and nvJitLink: its folder may not have been empty). Cold: NVRTC and nvJitLink;
# warm: the disk cache, in a new process.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call4; mkdir -p $O
trap 'cd $O/.. && tar czf call4.tgz call4 && rm -rf call4' EXIT
C=/tmp/fc_prepare4
rm -rf $C
for pass in cold warm; do
  for hd in 64 128; do
    echo "== before $pass hd$hd: $(ls $C/flex 2>/dev/null | wc -l) entries"
    ATTNRT_CACHE_DIR=$C timeout 120 bin/attnrt_flex_bench --hdim $hd --seqlen 2048 --mods causal,alibi \
      --backward 1 --reps 1 --csv $O/prepare_${pass}_hd$hd.csv > $O/prepare_${pass}_hd$hd.txt 2>&1
    echo "== prepare $pass hd$hd: $(grep -h '^flex_attention,' $O/prepare_${pass}_hd$hd.csv | cut -d, -f2,10 | cut -d';' -f1 | tr '\n' ' ')"
  done
done
ls -la $C/flex > $O/cache_listing.txt
