#!/usr/bin/env bash
# Issue 13, forward call 9: the landed forward (the staged lib/: w3's kernel where tiles are dealt
# in turn, a second instantiation with the dynamic scheduler where their lengths differ) against
# w3 once, forward only; then the landed plugin forward and backward at FlashAttention's shapes
# with PyTorch's anchors of the same call and the ratio table; then FA3's edge grid, the sink
# grids, random cases r300-r399, and compute-sanitizer on three persistent cases.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
ATTNRT_PLUGIN_PATH=$PWD/variants/w3 timeout 60 ./bin/attnrt bench attnrt.device=cuda --no-backward --backends flash_attention_3 --hdim 64,128,256 --seqlen 2048,4096,8192,16384 --csv $O/ab_w3.csv > $O/ab_w3.txt 2>&1
echo "ab w3 rc=$?"; cut -d, -f5 $O/ab_w3.csv | tr '\n' ' '; echo
timeout 120 ./bin/attnrt bench attnrt.device=cuda --backends flash_attention_3 --hdim 64,128,256 --seqlen 2048,4096,8192,16384 --csv $O/attnrt_bench.csv > $O/attnrt_bench.txt 2>&1
echo "bench rc=$?"
timeout 200 env OUT=$O python3 torch_sdpa_anchors.py --no-flex --hdim 64,128,256 --seqlen 2048,4096,8192,16384 > $O/anchors.txt 2>&1
echo "anchors rc=$?"
python3 bench_join.py $O/attnrt_bench.csv $O/anchors.csv > $O/ratios.txt 2>&1; grep -v "n/a" $O/ratios.txt | awk '{print $1, $3, $7}' | column -t
t() {  # name filter timeout
  timeout $3 ./bin/attnrt_gpu_tests --gtest_filter="$2" > $O/tests_$1.txt 2>&1
  echo "tests $1 rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_$1.txt | tail -6; grep -A5 "Failure" $O/tests_$1.txt | head -12
}
t edge 'Edge/FlashAttention3.*:FlashAttention3Support.*' 190
t sink 'Sink/SinkGrid.*:Sink/SinkEdgeGrid.*:SinkPlugin.*' 60
t random3 'Random/FlashAttention3.*/r3*' 100
subset='Edge/FlashAttention3.*/bf16_hd64_persistent_causal_b24_200:Edge/FlashAttention3.*/fp16_hd128_persistent_varlen_window:Edge/FlashAttention3.*/bf16_hd256_persistent_plain_b24_200'
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 7 ./bin/attnrt_gpu_tests --gtest_filter="$subset" > $O/sanitizer_$tool.txt 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $O/sanitizer_$tool.txt | head -5
done
cd ${OUT:-/tmp/o} && tar czf fa3.tgz fa3 && rm -rf fa3
