#!/bin/bash
# issue 19: query blocks of 64 rows where a call has few 128-row items per thread. Variant E
# (commit's heuristic behind ATTNRT_SDPA_ITEMS_PER_THREAD): 0 = never halve (main's D), 4 and 8 =
# halve below that many items per thread, 1000 = always halve. Torch before and after.
cd "$(dirname "$0")"; H=$PWD
export LD_LIBRARY_PATH=$H/pkg/lib
mkdir -p $OUT/p4; cd $OUT/p4
lscpu > lscpu.txt
export ATTNRT_BENCH_THREADS=16
python3 $H/torch_cpu_anchors.py --threads 16 --seqlens 512,1024 --passes forward --min-time 1.0 > torch_before.txt 2>&1
mv $OUT/torch_cpu_t16.csv torch_before.csv
for round in 1 2; do
  for v in 0 4 8 1000; do
    ATTNRT_SDPA_ITEMS_PER_THREAD=$v $H/pkg/bin/attnrt_cpu_bench --benchmark_filter='BM_sdpa_forward/seqlen:(512|1024)/' \
      --benchmark_format=csv > E${v}_r$round.csv 2> E${v}_r$round.err
  done
done
python3 $H/torch_cpu_anchors.py --threads 16 --seqlens 512,1024 --passes forward --min-time 1.0 > torch_after.txt 2>&1
mv $OUT/torch_cpu_t16.csv torch_after.csv
