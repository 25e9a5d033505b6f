#!/usr/bin/env bash
# Issue 17, call 12: with swizzled K/V rows (call 11), is the .L2::256B prefetch still worth it,
# and which split counts are best now?
#   swz        the kernel to commit (swizzled rows, L2 prefetch, PDL combine)
#   swznohint  the same with plain cp.async (no prefetch hint)
# Two alternated rounds with the anchors; then split counts forced on swz at 1 x 64k and 16 x 8k,
# pages 16 and 64 (ms in each split CSV's fourth column).
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O/work; mkdir -p $W
B="./bin/attnrt bench attnrt.device=cuda --decode --backends paged_attention"
V="swz swznohint"
for round in 1 2; do for v in $V; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 40 $B --page-size 16,64 --csv $W/bench_${v}_r$round.csv > $W/bench_${v}_r$round.txt 2>&1
  echo "bench $v round $round rc=$?"
done; done
OUT=$W timeout 100 python3 torch_decode_anchors.py > $W/decode_anchors.txt 2>&1; echo "anchors rc=$?"
for v in $V; do for round in 1 2; do
  python3 decode_ratios.py $W/bench_${v}_r$round.csv $W/decode_anchors.csv > $W/ratios_${v}_r$round.md 2>&1
done; echo "== $v r1 / r2"; paste -d'|' <(grep -E "^\| decode" $W/ratios_${v}_r1.md | cut -d'|' -f2,4,6 | sed 's/decode_D128_//') <(grep -E "^\| decode" $W/ratios_${v}_r2.md | cut -d'|' -f4,6); done
for pg in 16 64; do for spec in 1x65536:8,12,16,20,24,30,33,48,66 16x8192:1,2,3,4; do
  shape=${spec%%:*}; line=""; for s in $(echo ${spec#*:} | tr , ' '); do
    ATTNRT_PAGED_SPLITS=$s ATTNRT_PLUGIN_PATH=$PWD/variants/swz timeout 20 $B --decode-shapes $shape --page-size $pg \
      --gqa 4,8 --csv $W/split_swz_${shape}_p${pg}_s$s.csv > /dev/null 2>&1
    line="$line s$s=$(grep -h decode $W/split_swz_${shape}_p${pg}_s$s.csv | cut -d, -f4 | tr '\n' '/')"
  done; echo "split page $pg $shape:$line"; done; done
tar -czf $O/work.tgz -C $O work
rm -rf $W
