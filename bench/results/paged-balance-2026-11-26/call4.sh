#!/usr/bin/env bash
# Issue 17: the split-KV combine with a block a row above 8 splits (`wide`) against main's warp a
# row (`base`); two alternated rounds of every decode shape between two anchor runs; then the paged
# GPU tests on `wide` (split counts 1, 2, 7, 33, 64 against the unsplit call).
set -u
cd "$(dirname "$0")/../../../.gpu"
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call4; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
B="bin/attnrt bench attnrt.device=cuda --decode --page-size 16,64 --backends paged_attention"
V="base wide"
OUT=$O timeout 100 python3 torch_decode_anchors.py > $O/anchors_1.txt 2>&1; echo "anchors rc=$?"; mv $O/decode_anchors.csv $O/decode_anchors_1.csv
for round in 1 2 3; do for v in $V; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 60 $B --csv $O/bench_${v}_r$round.csv > $O/bench_${v}_r$round.txt 2>&1
  echo "bench $v round $round rc=$?"
done; V=$(echo $V | awk '{print $2, $1}'); done
OUT=$O timeout 100 python3 torch_decode_anchors.py > $O/anchors_2.txt 2>&1; echo "anchors rc=$?"; mv $O/decode_anchors.csv $O/decode_anchors_2.csv
for v in base wide; do echo "== $v"; paste -d, <(cut -d, -f1,5 $O/bench_${v}_r1.csv) <(cut -d, -f5 $O/bench_${v}_r2.csv) <(cut -d, -f5 $O/bench_${v}_r3.csv) | sed 's/decode_D128_//'; done
grep cudnn $O/decode_anchors_*.csv | cut -d, -f1,3 | sed 's/decode_D128_//'
ATTNRT_PLUGIN_PATH=$PWD/variants/wide bin/attnrt list > $O/list_wide.txt 2>&1
ATTNRT_PLUGIN_PATH=$PWD/variants/wide timeout 200 bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $O/paged_tests_wide.txt 2>&1; echo "tests rc=$?"
tail -3 $O/paged_tests_wide.txt; grep -c "^\[       OK" $O/paged_tests_wide.txt; grep "FAILED" $O/paged_tests_wide.txt | head
cd $O/.. && tar czf call4.tgz call4 && rm -rf call4
