#!/usr/bin/env bash
# Issue 17: the one shape below the 0.95x bar in some rounds (16 x 8k, GQA 8): paged_attention's
# split count forced by ATTNRT_PAGED_SPLITS (unset: the heuristic's 2; 1, 3, 4), two alternated
# rounds, page sizes 16 and 64, GQA 4 and 8, beside torch's SDPA decode anchors on the same shape
# in the same call (cuDNN and flash on a contiguous cache; bench/torch_decode_anchors.py).
set -u
cd "$(dirname "$0")/../../../.gpu"
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
B="bin/attnrt bench attnrt.device=cuda --decode --decode-shapes 16x8192 --gqa 4,8 --page-size 16,64 --backends paged_attention"
OUT=$O timeout 90 python3 torch_decode_anchors.py --shapes 16x8192 > $O/anchors_1.txt 2>&1; echo "anchors rc=$?"
mv $O/decode_anchors.csv $O/decode_anchors_1.csv
for round in 1 2; do
  for s in default 1 3 4; do
    if [ $s = default ]; then env -u ATTNRT_PAGED_SPLITS timeout 40 $B --csv $O/bench_${s}_r$round.csv > $O/bench_${s}_r$round.txt 2>&1
    else ATTNRT_PAGED_SPLITS=$s timeout 40 $B --csv $O/bench_${s}_r$round.csv > $O/bench_${s}_r$round.txt 2>&1; fi
    echo "bench splits=$s round $round rc=$?"
  done
done
OUT=$O timeout 90 python3 torch_decode_anchors.py --shapes 16x8192 > $O/anchors_2.txt 2>&1; echo "anchors rc=$?"
mv $O/decode_anchors.csv $O/decode_anchors_2.csv
head -20 $O/decode_anchors_1.csv $O/decode_anchors_2.csv
for f in $O/bench_*.csv; do echo "== $f"; cat $f; done
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
