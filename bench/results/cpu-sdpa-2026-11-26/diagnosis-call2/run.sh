#!/bin/bash
# issue 19: per-row profile, main's softmax (pkg) against the batched softmax (variants/B)
cd "$(dirname "$0")"; H=$PWD
export LD_LIBRARY_PATH=$H/pkg/lib
mkdir -p $OUT/p2; cd $OUT/p2
export ATTNRT_BENCH_THREADS=16
python3 $H/torch_cpu_anchors.py --threads 16 --seqlens 512,1024,2048 --passes forward --min-time 1 > torch_a.txt 2>&1
for row in 'seqlen:512/causal:0' 'seqlen:1024/causal:0' 'seqlen:2048/causal:0' 'seqlen:512/causal:1' 'seqlen:1024/causal:1' 'seqlen:2048/causal:1'; do
  n=$(echo $row | tr ':/' '__')
  for v in A B C; do
    if [ $v != A ]; then export ATTNRT_PLUGIN_PATH=$H/variants/$v; else unset ATTNRT_PLUGIN_PATH; fi
    $H/pkg/bin/attnrt_cpu_bench --benchmark_filter="BM_sdpa_forward/$row/bf16:1" --benchmark_format=csv > ${v}_$n.csv 2> ${v}_$n.err
  done
done
unset ATTNRT_PLUGIN_PATH
python3 $H/torch_cpu_anchors.py --threads 16 --seqlens 512,1024,2048 --passes forward --min-time 1 > torch_b.txt 2>&1
