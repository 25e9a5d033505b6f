#!/usr/bin/env bash
# Issue 17: blocks of two warp groups, each half of the block's keys, merged in the block
# (`new`, the heuristic: two groups where its stream count is even: 16 x 8k unsplit, 1 x 64k in 16
# splits), against the same plugin with ATTNRT_PAGED_GROUPS=1 (`new_g1`: one group, as before)
# and the plugin of commit 7dff125 (`wide`); three alternated rounds of every decode shape between
# two anchor runs. Then the paged GPU tests twice at once: with the heuristic, and with
# ATTNRT_PAGED_GROUPS=2 (two groups in every call at head_dim 64 and 128).
set -u
cd "$(dirname "$0")/../../../.gpu"
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call5; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
B="bin/attnrt bench attnrt.device=cuda --decode --page-size 16,64 --backends paged_attention"
run() {  # variant round
  case $1 in
    new) ATTNRT_PLUGIN_PATH=$PWD/variants/new timeout 60 $B --csv $O/bench_$1_r$2.csv > $O/bench_$1_r$2.txt 2>&1 ;;
    new_g1) ATTNRT_PAGED_GROUPS=1 ATTNRT_PLUGIN_PATH=$PWD/variants/new timeout 60 $B --csv $O/bench_$1_r$2.csv > $O/bench_$1_r$2.txt 2>&1 ;;
    wide) ATTNRT_PLUGIN_PATH=$PWD/variants/wide timeout 60 $B --csv $O/bench_$1_r$2.csv > $O/bench_$1_r$2.txt 2>&1 ;;
  esac
  echo "bench $1 round $2 rc=$?"
}
OUT=$O timeout 100 python3 torch_decode_anchors.py > $O/anchors_1.txt 2>&1; echo "anchors rc=$?"; mv $O/decode_anchors.csv $O/decode_anchors_1.csv
run new 1; run new_g1 1; run wide 1
run wide 2; run new 2; run new_g1 2
run new_g1 3; run wide 3; run new 3
OUT=$O timeout 100 python3 torch_decode_anchors.py > $O/anchors_2.txt 2>&1; echo "anchors rc=$?"; mv $O/decode_anchors.csv $O/decode_anchors_2.csv
for v in new new_g1 wide; do echo "== $v"; paste -d, <(cut -d, -f1,5 $O/bench_${v}_r1.csv) <(cut -d, -f5 $O/bench_${v}_r2.csv) <(cut -d, -f5 $O/bench_${v}_r3.csv) | sed 's/decode_D128_//'; done
grep cudnn $O/decode_anchors_*.csv | cut -d, -f1,3 | sed 's/decode_D128_//;s/.*anchors_//'
mkdir -p $O/c1 $O/c2
(ATTNRT_CACHE_DIR=$O/c1 ATTNRT_PLUGIN_PATH=$PWD/variants/new timeout 300 bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $O/paged_tests_new.txt 2>&1; echo "tests new rc=$?") &
(ATTNRT_CACHE_DIR=$O/c2 ATTNRT_PAGED_GROUPS=2 ATTNRT_PLUGIN_PATH=$PWD/variants/new timeout 300 bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $O/paged_tests_new_groups2.txt 2>&1; echo "tests groups2 rc=$?") &
wait
rm -rf $O/c1 $O/c2
for f in $O/paged_tests_*.txt; do echo "== $f"; tail -2 $f; grep -c "^\[       OK" $f; grep "FAILED\|Failure" $f | head -5; done
cd $O/.. && tar czf call5.tgz call5 && rm -rf call5
