#!/usr/bin/env bash
# Issue 13, forward call 1: the persistent forward (variants/pers: one CTA per SM walking
# non-causal tiles, Q/K/V ring carried across tiles, O staged in its own tile) against main's
# forward (variants/main), alternated twice, forward only; PyTorch's anchors of the same call;
# FA3's edge grid on the persistent variant; ncu sections of both on hd64 S2048 (if the machine
# lets ncu read counters).
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
for round in 1 2; do
  for v in main pers; do
    ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 80 ./bin/attnrt bench attnrt.device=cuda --no-backward --backends flash_attention_3 --hdim 64,128,256 --seqlen 2048,4096,8192,16384 --csv $O/ab_${v}_$round.csv > $O/ab_${v}_$round.txt 2>&1
    echo "ab $v $round rc=$?"; cut -d, -f1,5 $O/ab_${v}_$round.csv | tr '\n' ' '; echo
  done
done
timeout 200 env OUT=$O python3 torch_sdpa_anchors.py --no-flex --hdim 64,128,256 --seqlen 2048,4096,8192,16384 > $O/anchors.txt 2>&1
echo "anchors rc=$?"
for v in main pers; do python3 bench_join.py $O/ab_${v}_1.csv $O/anchors.csv > $O/ratios_$v.txt 2>&1; done
ATTNRT_PLUGIN_PATH=$PWD/variants/pers timeout 110 ./bin/attnrt_gpu_tests --gtest_filter='Edge/FlashAttention3.*:FlashAttention3Support.*:-*_4097:*_1000' > $O/tests_edge_pers.txt 2>&1
echo "edge rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_edge_pers.txt | tail -8; grep -A5 "Failure" $O/tests_edge_pers.txt | head -12
for v in main pers; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 60 ncu --clock-control none -k regex:forward_kernel -c 2 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
    ./bin/attnrt bench attnrt.device=cuda --no-backward --backends flash_attention_3 --hdim 64 --seqlen 2048 --warmup 0 --iterations 1 > $O/ncu_$v.txt 2>&1
  echo "ncu $v rc=$?"
done
cd ${OUT:-/tmp/o} && tar czf fa3.tgz fa3 && rm -rf fa3
