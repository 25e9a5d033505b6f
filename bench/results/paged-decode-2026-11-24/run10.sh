#!/usr/bin/env bash
# Issue 17, call 10: are the padded shared-memory rows behind the profiler's "33% excessive sectors"?
#   base   the committed kernel: K/V rows padded to head_dim + 8 elements (272 bytes at 128)
#   nopad  rows of exactly head_dim (-DATTNRT_PAGED_PAD=0): every row's cp.async destinations
#          128-byte aligned, at the cost of bank conflicts in ldmatrix
# Two alternated bench rounds with the anchors, then Nsight Compute on each at 256 x 1k.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O/work; mkdir -p $W
B="./bin/attnrt bench attnrt.device=cuda --decode --backends paged_attention"
V="base nopad"
for round in 1 2; do for v in $V; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 40 $B --page-size 16,64 --csv $W/bench_${v}_r$round.csv > $W/bench_${v}_r$round.txt 2>&1
  echo "bench $v round $round rc=$?"
done; done
OUT=$W timeout 100 python3 torch_decode_anchors.py > $W/decode_anchors.txt 2>&1; echo "anchors rc=$?"
for v in $V; do for round in 1 2; do
  python3 decode_ratios.py $W/bench_${v}_r$round.csv $W/decode_anchors.csv > $W/ratios_${v}_r$round.md 2>&1
done; echo "== $v r1 / r2"; paste -d'|' <(grep -E "^\| decode" $W/ratios_${v}_r1.md | cut -d'|' -f2,4,6 | sed 's/decode_D128_//') <(grep -E "^\| decode" $W/ratios_${v}_r2.md | cut -d'|' -f4,6); done
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section SourceCounters"
for v in $V; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 100 /usr/local/cuda/bin/ncu $SEC -k regex:paged_attention_kernel --launch-skip 1 --launch-count 1 \
    $B --iterations 2 --warmup 1 --gqa 8 --decode-shapes 256x1024 --page-size 16 > $W/ncu_${v}_256x1k.txt 2>&1
  echo "ncu $v: $(grep -E 'DRAM Throughput|L2 Cache Throughput|excessive' $W/ncu_${v}_256x1k.txt | tr -s ' ' | tr '\n' ';')"
done
tar -czf $O/work.tgz -C $O work
rm -rf $W
