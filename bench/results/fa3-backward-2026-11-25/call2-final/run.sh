#!/usr/bin/env bash
# Issue 13, call 2: flash_attention_3 backward, final kernel (main's plugin = variants/hb: dQ by
# bulk reduce-add, loop-variant addresses, elementwise under the products at hd128, banded
# longest-first CTA order) against variants/h (the same without the banded order), alternated
# twice; anchors of the same call; then FA3's edge grid and the first 200 random cases.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
for round in 1 2; do
  for v in h hb; do
    ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 60 ./bin/attnrt bench attnrt.device=cuda --backends flash_attention_3 --hdim 64,128 --seqlen 2048,8192 --csv $O/ab_${v}_$round.csv > $O/ab_${v}_$round.txt 2>&1
    echo "ab $v $round rc=$?"; grep bwd $O/ab_${v}_$round.csv | cut -d, -f5 | tr '\n' ' '; echo
  done
done
timeout 100 ./bin/attnrt bench attnrt.device=cuda --backends flash_attention_3,flash_attention_2 --hdim 64,128 --seqlen 2048,4096,8192,16384 --csv $O/attnrt_bench.csv > $O/attnrt_bench.txt 2>&1
echo "bench rc=$?"
timeout 200 env OUT=$O python3 torch_sdpa_anchors.py --no-flex --hdim 64,128 --seqlen 2048,4096,8192,16384 > $O/anchors.txt 2>&1
echo "anchors rc=$?"
python3 bench_join.py $O/attnrt_bench.csv $O/anchors.csv > $O/ratios.txt 2>&1; cat $O/ratios.txt | head -70
timeout 90 ./bin/attnrt_gpu_tests --gtest_filter='Edge/FlashAttention3.*:FlashAttention3Support.*:-*_4097' > $O/tests_edge.txt 2>&1
echo "edge rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_edge.txt | tail -8; grep -A5 "Failure" $O/tests_edge.txt | head -12
timeout 100 ./bin/attnrt_gpu_tests --gtest_filter='Random/FlashAttention3.*/r0*:Random/FlashAttention3.*/r1*' > $O/tests_random_a.txt 2>&1
echo "random rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_random_a.txt | tail -8; grep -A5 "Failure" $O/tests_random_a.txt | head -12
cd ${OUT:-/tmp/o} && tar czf fa3.tgz fa3 && rm -rf fa3
