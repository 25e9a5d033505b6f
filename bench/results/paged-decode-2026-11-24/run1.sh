#!/usr/bin/env bash
# Issue 17, call 1: paged_attention decode bandwidth with three K/V load paths, each built from the
# same source (plugins/cuda/paged_attention/paged_attention.cuh) with one macro:
#   variants/v0    cp.async 16 B per thread (the committed kernel)
#   variants/l2    cp.async with the .L2::256B prefetch hint   (-DATTNRT_PAGED_L2_HINT=1)
#   variants/bulk  cp.async.bulk (TMA) one copy per K/V row on sm_90 (-DATTNRT_PAGED_BULK=1)
# alternated over two rounds, PyTorch's anchors in the same call, a split-count sweep, and the
# paged correctness tests on the bulk build.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O/work; mkdir -p $W
B="./bin/attnrt bench attnrt.device=cuda --decode --page-size 16,64 --backends paged_attention"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $W/gpu.txt 2>&1
for round in 1 2; do
  for v in v0 l2 bulk; do
    ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 40 $B --csv $W/bench_${v}_r$round.csv > $W/bench_${v}_r$round.txt 2>&1
    echo "bench $v round $round rc=$?"
  done
done
OUT=$W timeout 100 python3 torch_decode_anchors.py > $W/decode_anchors.txt 2>&1; echo "anchors rc=$?"
for v in v0 l2 bulk; do for round in 1 2; do
  python3 decode_ratios.py $W/bench_${v}_r$round.csv $W/decode_anchors.csv > $W/ratios_${v}_r$round.md 2>&1
  echo "== $v r$round"; grep -E "^\| decode" $W/ratios_${v}_r$round.md | cut -d'|' -f2,4,5,6
done; done
for v in v0 bulk; do for s in 16 33 66; do
  ATTNRT_PAGED_SPLITS=$s ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 20 $B --decode-shapes 1x65536 --page-size 16 \
    --csv $W/split_${v}_1x65536_s$s.csv > /dev/null 2>&1
  echo "split $v 1x65536 s=$s: $(grep -h forward $W/split_${v}_1x65536_s$s.csv | cut -d, -f1,4,6 | tr '\n' ' ')"
done; for s in 1 2 4; do
  ATTNRT_PAGED_SPLITS=$s ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 20 $B --decode-shapes 16x8192 --page-size 16 \
    --csv $W/split_${v}_16x8192_s$s.csv > /dev/null 2>&1
  echo "split $v 16x8192 s=$s: $(grep -h forward $W/split_${v}_16x8192_s$s.csv | cut -d, -f1,4,6 | tr '\n' ' ')"
done; done
ATTNRT_PLUGIN_PATH=$PWD/variants/bulk timeout 150 ./bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $W/paged_tests_bulk.txt 2>&1
echo "paged tests (bulk) rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED" $W/paged_tests_bulk.txt | tail -6
tar -czf $O/work.tgz -C $O work
rm -rf $W
