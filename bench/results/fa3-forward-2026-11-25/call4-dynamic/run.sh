#!/usr/bin/env bash
# Issue 13, forward call 4: w3 (call 3's: persistent, static walk for non-causal grids, one CTA
# per tile for causal ones; head_dim 64 on 192-row tiles) against dyn (the same with the tile
# scheduler: causal, window and varlen grids persistent too, CTAs taking the next free tile from
# a counter in L2-sized bands, longest first), forward only, alternated twice. Then dyn (the
# staged lib/) on FA3's edge grid (with the new persistent_* cases), the sink grids, and
# compute-sanitizer memcheck and racecheck on three of the persistent cases.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
for round in 1 2; do
  for v in w3 dyn; do
    ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 60 ./bin/attnrt bench attnrt.device=cuda --no-backward --backends flash_attention_3 --hdim 64,128,256 --seqlen 2048,4096,8192,16384 --csv $O/ab_${v}_$round.csv > $O/ab_${v}_$round.txt 2>&1
    echo "ab $v $round rc=$?"; cut -d, -f5 $O/ab_${v}_$round.csv | tr '\n' ' '; echo
  done
done
t() {  # name filter timeout
  timeout $3 ./bin/attnrt_gpu_tests --gtest_filter="$2" > $O/tests_$1.txt 2>&1
  echo "tests $1 rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_$1.txt | tail -6; grep -A5 "Failure" $O/tests_$1.txt | head -12
}
t edge 'Edge/FlashAttention3.*:FlashAttention3Support.*' 200
t sink 'Sink/SinkGrid.*:Sink/SinkEdgeGrid.*:SinkPlugin.*' 80
subset='Edge/FlashAttention3.*/bf16_hd64_persistent_causal_b24_200:Edge/FlashAttention3.*/fp16_hd128_persistent_varlen_window:Edge/FlashAttention3.*/bf16_hd256_persistent_plain_b24_200'
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 7 ./bin/attnrt_gpu_tests --gtest_filter="$subset" > $O/sanitizer_$tool.txt 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $O/sanitizer_$tool.txt | head -5
done
cd ${OUT:-/tmp/o} && tar czf fa3.tgz fa3 && rm -rf fa3
