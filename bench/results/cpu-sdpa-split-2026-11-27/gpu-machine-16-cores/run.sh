#!/bin/bash
# Issue 19, 2026-11-27: the CPU sdpa forward with key splits for calls with few items (new)
# against main 26b668f's plugin (base, ATTNRT_PLUGIN_PATH=variants/base) and PyTorch's CPU SDPA,
# on the GPU machine's 16 cores. Package: build-cpubench/pkg (Release, -DATTNRT_BENCH_TORCH=OFF
# -DATTNRT_CUDA=OFF -DATTNRT_BUILD_BENCHMARKS=ON; Debian's libdnnl and the other libraries beside it).
# (1) every forward row of the new plugin, 3 repetitions, between two PyTorch runs; (2) base and
# new on the eight short rows (512 and 1024 keys, fp32 and bf16, causal and not), one process
# each, alternated, three rounds.
cd "$(dirname "$0")"; H=$PWD; R=$(cd ../../../.. && pwd)
P=$R/build-cpubench/pkg
export LD_LIBRARY_PATH=$P/lib
chmod -R go-w $P
O=$OUT/split; mkdir -p $O; cd $O
trap 'cd $OUT && tar czf split.tgz split && rm -rf split' EXIT
lscpu > lscpu.txt
python3 -c "import torch; print(torch.__version__, torch.backends.cpu.get_cpu_capability())" > torch_version.txt
export ATTNRT_BENCH_THREADS=16
python3 $R/bench/torch_cpu_anchors.py --threads 16 --passes forward --min-time 1.0 > torch_before.txt 2>&1
mv $OUT/torch_cpu_t16.csv torch_before.csv
$P/bin/attnrt_cpu_bench --benchmark_filter='BM_sdpa_forward' --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_format=csv > attnrt_new_t16.csv 2> attnrt_new_t16.err
python3 $R/bench/torch_cpu_anchors.py --threads 16 --passes forward --min-time 1.0 > torch_after.txt 2>&1
mv $OUT/torch_cpu_t16.csv torch_after.csv
for round in 1 2 3; do
  for row in 'seqlen:512/causal:0' 'seqlen:1024/causal:0' 'seqlen:512/causal:1' 'seqlen:1024/causal:1'; do
    for dt in 0 1; do
      n=$(echo $row | tr ':/' '__')_bf16_$dt
      for v in base new; do
        if [ $v = base ]; then export ATTNRT_PLUGIN_PATH=$P/variants/base; else unset ATTNRT_PLUGIN_PATH; fi
        $P/bin/attnrt_cpu_bench --benchmark_filter="BM_sdpa_forward/$row/bf16:$dt/" --benchmark_min_time=0.5 --benchmark_repetitions=3 \
          --benchmark_report_aggregates_only=true --benchmark_format=csv > ${v}_${n}_r$round.csv 2> ${v}_${n}_r$round.err
      done
    done
  done
done
unset ATTNRT_PLUGIN_PATH
python3 $R/bench/cpu_ratios.py attnrt_new_t16.csv torch_before.csv torch_after.csv
echo "== short rows, median ms per round (base / new)"
for f in base_*_r1.csv; do
  n=${f#base_}; n=${n%_r1.csv}
  line="$n:"
  for round in 1 2 3; do
    b=$(grep -h '_median' base_${n}_r$round.csv | cut -d, -f3); w=$(grep -h '_median' new_${n}_r$round.csv | cut -d, -f3)
    line="$line $b/$w"
  done
  echo "$line"
done
