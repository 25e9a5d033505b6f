#!/usr/bin/env bash
# Issue 17, call 16: the swizzled kernel (swz, as committed) against
#   ahead  the same, plus an L2 prefetch (prefetch.global.L2, one per 128-byte line) of the tile
#          after the cp.async ring's newest: a fourth tile in flight without shared memory
#          (-DATTNRT_PAGED_L2_AHEAD=1; its page lookups run one more tile ahead)
# Two alternated rounds with the anchors; split counts forced at 16 x 8k on ahead.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O/work; mkdir -p $W
B="./bin/attnrt bench attnrt.device=cuda --decode --backends paged_attention"
V="swz ahead"
for round in 1 2; do for v in $V; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 40 $B --page-size 16,64 --csv $W/bench_${v}_r$round.csv > $W/bench_${v}_r$round.txt 2>&1
  echo "bench $v round $round rc=$?"
done; done
OUT=$W timeout 100 python3 torch_decode_anchors.py > $W/decode_anchors.txt 2>&1; echo "anchors rc=$?"
for v in $V; do for round in 1 2; do
  python3 decode_ratios.py $W/bench_${v}_r$round.csv $W/decode_anchors.csv > $W/ratios_${v}_r$round.md 2>&1
done; echo "== $v r1 / r2"; paste -d'|' <(grep -E "^\| decode" $W/ratios_${v}_r1.md | cut -d'|' -f2,4,6 | sed 's/decode_D128_//') <(grep -E "^\| decode" $W/ratios_${v}_r2.md | cut -d'|' -f4,6); tail -1 $W/ratios_${v}_r1.md; done
for v in ahead; do for pg in 16 64; do line=""; for s in 1 2 4; do
  ATTNRT_PAGED_SPLITS=$s ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 20 $B --decode-shapes 16x8192 --page-size $pg \
    --gqa 4,8 --csv $W/split_${v}_16x8192_p${pg}_s$s.csv > /dev/null 2>&1
  line="$line s$s=$(grep -h decode $W/split_${v}_16x8192_p${pg}_s$s.csv | cut -d, -f4 | tr '\n' '/')"
done; echo "split $v page $pg 16x8192:$line"; done; done
tar -czf $O/work.tgz -C $O work
rm -rf $W
