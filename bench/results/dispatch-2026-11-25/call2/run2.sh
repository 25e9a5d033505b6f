#!/usr/bin/env bash
# Issue 19, call 2: flash_attention_2's launch path with cudaFuncSetAttribute set once per kernel
# and device (variants/new) against main before it (variants/old), both built with every head_dim;
# alternated twice, hd128 cases; then flash_attention_2's and sink's GPU grids on the new plugins.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
for round in 1 2; do
  for v in old new; do
    ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 100 ./bin/attnrt_sdpa_cuda_host_bench \
      --benchmark_filter='EmptyKernelLaunch|flash_attention_2' --benchmark_min_time=0.05 --benchmark_repetitions=5 \
      --benchmark_out=$O/host_${v}_$round.csv --benchmark_out_format=csv > $O/host_${v}_$round.txt 2>&1
    echo "$v round $round rc=$?"; grep -E "_median" $O/host_${v}_$round.txt | grep -E "Empty|forward" | awk '{print $1, $2, $3}'
  done
done
ATTNRT_PLUGIN_PATH=$PWD/variants/new timeout 300 ./bin/attnrt_gpu_tests \
  --gtest_filter='Grid/FlashAttention2Grid.*:Sink/SinkGrid.*:Sink/SinkEdgeGrid.*:SinkPlugin.*:FlashAttention2Support.*' \
  > $O/fa2_sink_tests.txt 2>&1
echo "tests rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED" $O/fa2_sink_tests.txt | tail -12
