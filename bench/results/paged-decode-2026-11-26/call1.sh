#!/usr/bin/env bash
# Issue 17, fused split-KV combine, call 1 (from /work/main/.gpu-p17, staged by stage.sh):
#   old  main's paged plugin (c7d6b03): splits merged by the combine kernel (PDL on sm_90)
#   new  this branch's: the split that finishes last merges (ATTNRT_PAGED_FUSED_COMBINE default 1)
# 1. the paged GPU tests on new at head_dim 64/128/256 (both combines: the split tests set
#    ATTNRT_PAGED_FUSED_COMBINE 0 and 1 themselves);
# 2. attnrt bench --decode (page 16/64, nhd/hnd) old, new, old, new; torch_decode_anchors.py;
#    decode_ratios.py per round, ab_table.py for the table.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O; mkdir -p $W
nvidia-smi > $W/gpu.txt 2>&1
echo "[$SECONDS s] tests"
ATTNRT_PLUGIN_PATH=$PWD/variants/new timeout 190 ./bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $W/paged_tests_new.txt 2>&1
echo "paged tests (new) rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED" $W/paged_tests_new.txt | tail -8
B="./bin/attnrt bench attnrt.device=cuda --decode --page-size 16,64 --kv-layout nhd,hnd --backends paged_attention"
V="old new"
for round in 1 2; do for v in $V; do
  echo "[$SECONDS s] bench $v r$round"
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 60 $B --csv $W/bench_${v}_r$round.csv > $W/bench_${v}_r$round.txt 2>&1
  echo "bench $v round $round rc=$?"
done; done
echo "[$SECONDS s] anchors"
OUT=$W timeout 120 python3 torch_decode_anchors.py > $W/decode_anchors.txt 2>&1; echo "anchors rc=$?"
for v in $V; do for round in 1 2; do
  python3 decode_ratios.py $W/bench_${v}_r$round.csv $W/decode_anchors.csv $W/ratios_${v}_r$round.csv > $W/ratios_${v}_r$round.md 2>&1
done; done
echo "[$SECONDS s] done"
python3 ab_table.py $W old new | tee $W/ab_table.md
