#!/usr/bin/env bash
# Issue 17, call 9: per-warp copy pipelines. Both builds are the committed kernel (L2 prefetch, PDL);
#   base  the block copies whole K/V tiles and waits for them with __syncthreads (twice per tile)
#   wp    each warp copies its own 16 rows of every tile and waits only for them
#         (-DATTNRT_PAGED_WARP_PIPE=1): no block barrier in the key loop, so one warp's late rows
#         do not hold back the other warps' copies
# alternated over two rounds with the anchors of the same call, a split sweep, and the paged
# correctness tests on wp.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O/work; mkdir -p $W
B="./bin/attnrt bench attnrt.device=cuda --decode --backends paged_attention"
V="base wp"
for round in 1 2; do for v in $V; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 40 $B --page-size 16,64 --csv $W/bench_${v}_r$round.csv > $W/bench_${v}_r$round.txt 2>&1
  echo "bench $v round $round rc=$?"
done; done
OUT=$W timeout 100 python3 torch_decode_anchors.py > $W/decode_anchors.txt 2>&1; echo "anchors rc=$?"
for v in $V; do for round in 1 2; do
  python3 decode_ratios.py $W/bench_${v}_r$round.csv $W/decode_anchors.csv > $W/ratios_${v}_r$round.md 2>&1
done; echo "== $v r1 / r2"; paste -d'|' <(grep -E "^\| decode" $W/ratios_${v}_r1.md | cut -d'|' -f2,4,6 | sed 's/decode_D128_//') <(grep -E "^\| decode" $W/ratios_${v}_r2.md | cut -d'|' -f4,6); done
for v in wp; do for spec in 1x65536:16,33 16x8192:1,2; do
  shape=${spec%%:*}; for s in $(echo ${spec#*:} | tr , ' '); do
    ATTNRT_PAGED_SPLITS=$s ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 20 $B --decode-shapes $shape --page-size 16 \
      --gqa 8 --csv $W/split_${v}_${shape}_s$s.csv > $W/split_${v}_${shape}_s$s.txt 2>&1
    echo "split $v $shape s=$s rc=$?: $(grep -h decode $W/split_${v}_${shape}_s$s.csv | cut -d, -f4 | tr '\n' ' ')"
  done; done; done
ATTNRT_PLUGIN_PATH=$PWD/variants/wp timeout 100 ./bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $W/paged_tests_wp.txt 2>&1
echo "paged tests (wp) rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED" $W/paged_tests_wp.txt | tail -4
tar -czf $O/work.tgz -C $O work
rm -rf $W
