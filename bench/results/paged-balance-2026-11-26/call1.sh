#!/usr/bin/env bash
# Issue 17, a probe before changing the kernel: is a decode step bound per SM (then the 8 of 264
# block slots that 16 x 8k's 256 blocks leave empty cost ~3%) or by HBM? One split forced
# (ATTNRT_PAGED_SPLITS=1) at batch 32 and 33 x 8k keys (256 and 264 blocks, two per SM), 64 and
# 66 x 4k, beside the heuristic at 16 x 8k; two alternated rounds; torch's anchors on the same shapes.
set -u
cd "$(dirname "$0")/../../../.gpu"
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
SH=32x8192,33x8192,64x4096,66x4096,16x8192
B="bin/attnrt bench attnrt.device=cuda --decode --gqa 8 --page-size 16 --backends paged_attention"
for round in 1 2; do
  ATTNRT_PAGED_SPLITS=1 timeout 60 $B --decode-shapes $SH --csv $O/bench_s1_r$round.csv > $O/bench_s1_r$round.txt 2>&1; echo "s1 r$round rc=$?"
  env -u ATTNRT_PAGED_SPLITS timeout 60 $B --decode-shapes 16x8192,32x8192,33x8192 --csv $O/bench_def_r$round.csv > $O/bench_def_r$round.txt 2>&1; echo "def r$round rc=$?"
done
OUT=$O timeout 150 python3 torch_decode_anchors.py --shapes $SH --gqa 8 > $O/anchors.txt 2>&1; echo "anchors rc=$?"
for f in $O/*.csv; do echo "== $f"; cat $f; done
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
