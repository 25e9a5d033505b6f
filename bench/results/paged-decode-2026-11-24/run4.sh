#!/usr/bin/env bash
# Issue 17, call 4: does shared memory left to L1 matter? Call 3's split sweep streamed 1 x 64k
# faster at 16 splits (one block per SM) than at the heuristic's 30 (two per SM), and call 2's one
# block with 6 stages (213 KB) was 0.70x of 2 x 3 stages. All with the .L2::256B hint and PDL:
#   l2pdl  3 stages, default carveout (2 blocks per SM, 217 KB of shared memory)
#   s3c50  3 stages, carveout 50% (-DATTNRT_PAGED_CARVEOUT=50): 1 block per SM, L1 keeps ~124 KB
#   s2c66  2 stages, carveout 66%: 2 blocks per SM (145 KB)
#   s4c66  4 stages, carveout 66%: 1 block per SM (143 KB)
#   s2     2 stages, default carveout (3 blocks per SM)
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O/work; mkdir -p $W
B="./bin/attnrt bench attnrt.device=cuda --decode --backends paged_attention"
V="l2pdl s3c50 s2c66 s4c66 s2"
for round in 1 2; do for v in $V; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 40 $B --page-size 16,64 --csv $W/bench_${v}_r$round.csv > $W/bench_${v}_r$round.txt 2>&1
  echo "bench $v round $round rc=$?"
done; done
OUT=$W timeout 100 python3 torch_decode_anchors.py > $W/decode_anchors.txt 2>&1; echo "anchors rc=$?"
for v in $V; do for round in 1 2; do
  python3 decode_ratios.py $W/bench_${v}_r$round.csv $W/decode_anchors.csv > $W/ratios_${v}_r$round.md 2>&1
done; echo "== $v r1 / r2"; paste -d'|' <(grep -E "^\| decode" $W/ratios_${v}_r1.md | cut -d'|' -f2,4,6 | sed 's/decode_D128_//') <(grep -E "^\| decode" $W/ratios_${v}_r2.md | cut -d'|' -f4,6); done
for v in l2pdl s3c50 s2c66; do for spec in 1x65536:8,16,33 16x8192:1,2 256x1024:1,2; do
  shape=${spec%%:*}; for s in $(echo ${spec#*:} | tr , ' '); do
    ATTNRT_PAGED_SPLITS=$s ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 20 $B --decode-shapes $shape --page-size 16 \
      --gqa 8 --csv $W/split_${v}_${shape}_s$s.csv > $W/split_${v}_${shape}_s$s.txt 2>&1
    echo "split $v $shape s=$s rc=$?: $(grep -h decode $W/split_${v}_${shape}_s$s.csv | cut -d, -f4 | tr '\n' ' ')"
  done; done; done
tar -czf $O/work.tgz -C $O work
rm -rf $W
