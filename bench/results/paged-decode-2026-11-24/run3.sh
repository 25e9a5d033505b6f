#!/usr/bin/env bash
# Issue 17, call 3: paged_attention decode bandwidth, both with the .L2::256B prefetch hint and the
# split-KV combine launched by programmatic dependent launch (call 2: +1-2% and +0-1%):
#   variants/l2pdl  4 warps, each 16 keys of a 64-key tile and all of O's columns (194 registers)
#   variants/cs2    8 warps (-DATTNRT_PAGED_COL_SPLIT=2): two warps per 16 keys, each half of O's
#                   columns (128 registers), so twice the threads issue the tile's cp.async
# (call 2: one block of 4 warps with 6 stages streamed 0.70x of two blocks with 3 stages: more
# bytes in flight per warp did not help, more warps did), alternated over two rounds, anchors in
# the same call, a split-count sweep, and the paged correctness tests on cs2.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O/work; mkdir -p $W
B="./bin/attnrt bench attnrt.device=cuda --decode --backends paged_attention"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $W/gpu.txt 2>&1
V="l2pdl cs2"
for round in 1 2; do for v in $V; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 40 $B --page-size 16,64 --csv $W/bench_${v}_r$round.csv > $W/bench_${v}_r$round.txt 2>&1
  echo "bench $v round $round rc=$?"
done; done
OUT=$W timeout 100 python3 torch_decode_anchors.py > $W/decode_anchors.txt 2>&1; echo "anchors rc=$?"
for v in $V; do for round in 1 2; do
  python3 decode_ratios.py $W/bench_${v}_r$round.csv $W/decode_anchors.csv > $W/ratios_${v}_r$round.md 2>&1
  echo "== $v r$round"; grep -E "^\| decode" $W/ratios_${v}_r$round.md | cut -d'|' -f2,4,6 | sed 's/decode_D128_//'
done; done
for v in $V; do for spec in 1x65536:16,24,30,33,44,66 16x8192:1,2,3,4 64x2048:1,2; do
  shape=${spec%%:*}; for s in $(echo ${spec#*:} | tr , ' '); do
    ATTNRT_PAGED_SPLITS=$s ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 20 $B --decode-shapes $shape --page-size 16 \
      --gqa 8 --csv $W/split_${v}_${shape}_s$s.csv > $W/split_${v}_${shape}_s$s.txt 2>&1
    echo "split $v $shape s=$s rc=$?: $(grep -h decode $W/split_${v}_${shape}_s$s.csv | cut -d, -f4,6 | tr '\n' ' ')"
  done; done; done
ATTNRT_PLUGIN_PATH=$PWD/variants/cs2 timeout 100 ./bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $W/paged_tests_cs2.txt 2>&1
echo "paged tests (cs2) rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED|SKIPPED \]" $W/paged_tests_cs2.txt | tail -6
tar -czf $O/work.tgz -C $O work
rm -rf $W
