#!/bin/bash
# issue 19: the forward table (variant D: batched softmax + tiles packed by the first item that
# needs them, one parallel region) against PyTorch, torch timed before and after; then main (A),
# softmax only (B) and D on the short bf16 rows, one process each, alternated twice.
cd "$(dirname "$0")"; H=$PWD
export LD_LIBRARY_PATH=$H/pkg/lib
mkdir -p $OUT/p3; cd $OUT/p3
lscpu > lscpu.txt; git -C $H rev-parse HEAD > commit.txt 2>/dev/null
python3 -c "import torch; print(torch.__version__, torch.backends.cpu.get_cpu_capability())" > torch_version.txt
export ATTNRT_BENCH_THREADS=16
python3 $H/torch_cpu_anchors.py --threads 16 --passes forward --min-time 1.0 > torch_before.txt 2>&1
mv $OUT/torch_cpu_t16.csv torch_before.csv
ATTNRT_PLUGIN_PATH=$H/variants/D $H/pkg/bin/attnrt_cpu_bench --benchmark_filter='BM_sdpa_forward' \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_format=csv > attnrt_D_t16.csv 2> attnrt_D_t16.err
python3 $H/torch_cpu_anchors.py --threads 16 --passes forward --min-time 1.0 > torch_after.txt 2>&1
mv $OUT/torch_cpu_t16.csv torch_after.csv
for round in 1 2; do
for row in 'seqlen:512/causal:0' 'seqlen:1024/causal:0' 'seqlen:512/causal:1' 'seqlen:1024/causal:1'; do
  n=$(echo $row | tr ':/' '__')
  for v in A B D; do
    if [ $v != A ]; then export ATTNRT_PLUGIN_PATH=$H/variants/$v; else unset ATTNRT_PLUGIN_PATH; fi
    $H/pkg/bin/attnrt_cpu_bench --benchmark_filter="BM_sdpa_forward/$row/bf16:1" --benchmark_format=csv > ${v}_${n}_r$round.csv 2> ${v}_${n}_r$round.err
  done
done
done
