#!/usr/bin/env bash
# Issue 17: one block per SM with a deeper ring, as cuDNN's decode kernel runs (call 2: one 4-warp
# block per SM, 128 blocks at 16 x 8k, unsplit). Variants of main's kernel (variants/<v>/, picked by
# ATTNRT_PLUGIN_PATH; the split heuristic follows each one's blocks per SM):
#   base    main: 3 stages of 64 keys, 2 blocks per SM at head_dim 128
#   s4, s5, s6   4, 5, 6 stages of 64 keys: 1 block per SM
#   k128s3  3 stages of 128 keys (32 keys a warp): 1 block per SM
# Two alternated rounds between two anchor runs.
set -u
cd "$(dirname "$0")/../../../.gpu"
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call3; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
B="bin/attnrt bench attnrt.device=cuda --decode --page-size 16,64 --backends paged_attention"
OUT=$O timeout 100 python3 torch_decode_anchors.py > $O/anchors_1.txt 2>&1; echo "anchors rc=$?"; mv $O/decode_anchors.csv $O/decode_anchors_1.csv
for round in 1 2; do for v in base s4 s5 s6 k128s3; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 60 $B --csv $O/bench_${v}_r$round.csv > $O/bench_${v}_r$round.txt 2>&1
  echo "bench $v round $round rc=$?"
done; done
OUT=$O timeout 100 python3 torch_decode_anchors.py > $O/anchors_2.txt 2>&1; echo "anchors rc=$?"; mv $O/decode_anchors.csv $O/decode_anchors_2.csv
for v in base s4 s5 s6 k128s3; do echo "== $v"; paste -d, <(cut -d, -f1,5 $O/bench_${v}_r1.csv) <(cut -d, -f5 $O/bench_${v}_r2.csv) | sed 's/decode_D128_//'; done
grep cudnn $O/decode_anchors_*.csv
cd $O/.. && tar czf call3.tgz call3 && rm -rf call3
