#!/usr/bin/env bash
# Issue 17, a probe: the many-block shapes (64 x 2k, 256 x 1k: unsplit, blocks of one group by the
# heuristic) with two groups forced (ATTNRT_PAGED_GROUPS=2: each block a (sequence, KV head) pair
# in two halves, half as many blocks), against the heuristic; three alternated rounds, anchors after.
set -u
cd "$(dirname "$0")/../../../.gpu"
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call7; mkdir -p $O
B="bin/attnrt bench attnrt.device=cuda --decode --decode-shapes 64x2048,256x1024 --page-size 16,64 --backends paged_attention"
for r in 1 2 3; do
  timeout 60 $B --csv $O/bench_default_r$r.csv > /dev/null 2>&1; echo "default r$r rc=$?"
  ATTNRT_PAGED_GROUPS=2 timeout 60 $B --csv $O/bench_groups2_r$r.csv > /dev/null 2>&1; echo "groups2 r$r rc=$?"
done
OUT=$O timeout 100 python3 torch_decode_anchors.py --shapes 64x2048,256x1024 > $O/anchors.txt 2>&1; echo "anchors rc=$?"
for v in default groups2; do echo "== $v"; paste -d, <(cut -d, -f1,5 $O/bench_${v}_r1.csv) <(cut -d, -f5 $O/bench_${v}_r2.csv) <(cut -d, -f5 $O/bench_${v}_r3.csv) | sed 's/decode_D128_//'; done
grep cudnn $O/decode_anchors.csv | cut -d, -f1,3 | sed 's/decode_D128_//'
cd $O/.. && tar czf call7.tgz call7 && rm -rf call7
