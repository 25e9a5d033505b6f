#!/usr/bin/env bash
# Issue 17, call 15: 16 x 8k at GQA 8 sits at 0.944-0.953x of cuDNN (calls 13-14). Variants of the
# swizzled kernel (swz, as committed):
#   trig       the attention kernel triggers the dependent combine launch after its key loop
#              (cudaTriggerProgrammaticLaunchCompletion), not at its end
#   lb3s2      2 stages with __launch_bounds__(128, 3): three blocks per SM (168 registers)
#   lb3s2trig  both
# Two alternated rounds with the anchors; split counts forced at 16 x 8k.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O/work; mkdir -p $W
B="./bin/attnrt bench attnrt.device=cuda --decode --backends paged_attention"
V="swz trig lb3s2 lb3s2trig"
for round in 1 2; do for v in $V; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 40 $B --page-size 16,64 --csv $W/bench_${v}_r$round.csv > $W/bench_${v}_r$round.txt 2>&1
  echo "bench $v round $round rc=$?"
done; done
OUT=$W timeout 100 python3 torch_decode_anchors.py > $W/decode_anchors.txt 2>&1; echo "anchors rc=$?"
for v in $V; do for round in 1 2; do
  python3 decode_ratios.py $W/bench_${v}_r$round.csv $W/decode_anchors.csv > $W/ratios_${v}_r$round.md 2>&1
done; echo "== $v r1 / r2"; paste -d'|' <(grep -E "^\| decode" $W/ratios_${v}_r1.md | cut -d'|' -f2,4,6 | sed 's/decode_D128_//') <(grep -E "^\| decode" $W/ratios_${v}_r2.md | cut -d'|' -f4,6); tail -1 $W/ratios_${v}_r1.md; done
for v in swz lb3s2; do for pg in 16 64; do line=""; for s in 1 2 3 4 6; do
  ATTNRT_PAGED_SPLITS=$s ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 20 $B --decode-shapes 16x8192 --page-size $pg \
    --gqa 4,8 --csv $W/split_${v}_16x8192_p${pg}_s$s.csv > /dev/null 2>&1
  line="$line s$s=$(grep -h decode $W/split_${v}_16x8192_p${pg}_s$s.csv | cut -d, -f4 | tr '\n' '/')"
done; echo "split $v page $pg 16x8192:$line"; done; done
tar -czf $O/work.tgz -C $O work
rm -rf $W
