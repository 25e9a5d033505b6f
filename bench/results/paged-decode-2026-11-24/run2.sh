#!/usr/bin/env bash
# Issue 17, call 2: paged_attention decode bandwidth, every variant with the .L2::256B prefetch
# hint on the K/V cp.async (call 1: +1-2% over the plain cp.async; TMA bulk row copies were 0.6x):
#   variants/l2       3 stages, 2 blocks per SM at head_dim 128
#   variants/l2s6     6 stages at head_dim 128 (-DATTNRT_PAGED_STAGES_128=6): 1 block per SM, 5 tiles in flight
#   variants/l2pdl    3 stages; split-KV combine launched with programmatic dependent launch (-DATTNRT_PAGED_PDL=1)
#   variants/l2s6pdl  both
# alternated over two rounds, PyTorch's anchors in the same call, a split-count sweep, and the
# paged correctness tests on l2s6pdl and l2.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O/work; mkdir -p $W
B="./bin/attnrt bench attnrt.device=cuda --decode --page-size 16,64 --backends paged_attention"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $W/gpu.txt 2>&1
V="l2 l2s6 l2pdl l2s6pdl"
for round in 1 2; do for v in $V; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 40 $B --csv $W/bench_${v}_r$round.csv > $W/bench_${v}_r$round.txt 2>&1
  echo "bench $v round $round rc=$?"
done; done
OUT=$W timeout 100 python3 torch_decode_anchors.py > $W/decode_anchors.txt 2>&1; echo "anchors rc=$?"
for v in $V; do for round in 1 2; do
  python3 decode_ratios.py $W/bench_${v}_r$round.csv $W/decode_anchors.csv > $W/ratios_${v}_r$round.md 2>&1
  echo "== $v r$round"; grep -E "^\| decode" $W/ratios_${v}_r$round.md | cut -d'|' -f2,4,6 | sed 's/decode_D128_//'
done; done
for v in l2 l2s6pdl; do for spec in 1x65536:16,24,30,33,44,66 16x8192:1,2,3,4; do
  shape=${spec%%:*}; for s in $(echo ${spec#*:} | tr , ' '); do
    ATTNRT_PAGED_SPLITS=$s ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 20 $B --decode-shapes $shape --page-size 16 \
      --csv $W/split_${v}_${shape}_s$s.csv > $W/split_${v}_${shape}_s$s.txt 2>&1
    echo "split $v $shape s=$s rc=$?: $(grep -h decode $W/split_${v}_${shape}_s$s.csv | cut -d, -f1,4,6 | tr '\n' ' ')"
  done; done; done
tail -3 $W/split_l2_1x65536_s16.txt
for v in l2s6pdl l2; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 100 ./bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $W/paged_tests_$v.txt 2>&1
  echo "paged tests ($v) rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED|SKIPPED \]" $W/paged_tests_$v.txt | tail -6
done
tar -czf $O/work.tgz -C $O work
rm -rf $W
