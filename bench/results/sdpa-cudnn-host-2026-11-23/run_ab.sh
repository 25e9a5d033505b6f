#!/usr/bin/env bash
# Call 4: A/B of the sdpa_cuda plugin in one call, to tell a change of the plugin from the
# machine: the same benchmark binary with this branch's plugin (.gpu-sdpa16/lib) and with main
# 488ab1c's (.gpu-sdpa16/ab_main/lib: the staged .gpu/'s sdpa_cuda, eager, sdpa and the same
# libraries), alternated twice, sdpa rows and the launch only.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
O=${OUT:-/tmp/o}; mkdir -p $O
uptime > $O/env.txt
F='EmptyKernelLaunch|forward_with_workspace/sdpa/dense|backward_with_workspace/sdpa/dense|forward_with_workspace/sdpa/varlen'
for round in 1 2; do
  for side in branch main; do
    if [ $side = branch ]; then B=./bin; L=$PWD/lib; else B=./ab_main/bin; L=$PWD/ab_main/lib; fi
    LD_LIBRARY_PATH=$L:$cudnn:/usr/local/cuda/lib64 ATTNRT_SDPA_CUDNN_TRACE=1 timeout 40 $B/attnrt_sdpa_cuda_host_bench \
      --benchmark_filter="$F" --benchmark_min_time=0.1 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      --benchmark_out=$O/ab_${side}_$round.json --benchmark_out_format=json > /dev/null 2> $O/ab_${side}_${round}_stderr.txt
    echo "$side $round rc=$?"
    python3 host_bench_summary.py $O/ab_${side}_$round.json $O/ab_${side}_${round}_stderr.txt | sed -n 3,8p
  done
done
(cd $O && tar cf ab_stderr.tar ab_*_stderr.txt && rm ab_*_stderr.txt)
