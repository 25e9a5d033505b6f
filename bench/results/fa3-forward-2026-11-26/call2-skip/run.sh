#!/usr/bin/env bash
# Issue 13, 2026-11-26 call 2 (same warm machine and staging as call 1): more forward A/B rounds
# of prev (main) and new (skip in the claimed kernel) at hd64/hd128 causal, since call 1's first
# round of new at hd64 S2048 causal was an outlier (292 vs 346 TFLOP/s); then the nine edge
# cases call 1's time limit cut, random r000-r199, and racecheck on two persistent cases.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3b; mkdir -p $O
for round in 1 2 3 4; do
  for v in new prev; do
    P=$PWD/variants/prev; [ $v = new ] && P=$PWD/lib/attnrt/plugins
    ATTNRT_PLUGIN_PATH=$P timeout 40 ./bin/attnrt bench attnrt.device=cuda --no-backward --mask causal --backends flash_attention_3 --hdim 64,128 --seqlen 2048,4096 --csv $O/ab_${v}_$round.csv > $O/ab_${v}_$round.txt 2>&1
    echo "ab $v $round rc=$? $(cut -d, -f5 $O/ab_${v}_$round.csv | tr '\n' ' ')"
  done
done
t() {  # name filter timeout
  timeout $3 ./bin/attnrt_gpu_tests --gtest_filter="$2" > $O/tests_$1.txt 2>&1
  echo "tests $1 rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_$1.txt | tail -6; grep -A5 "Failure" $O/tests_$1.txt | head -12
}
t edge_rest 'Edge/FlashAttention3.*fp16_hd256_*causal*:Edge/FlashAttention3.*fp16_hd256_persistent*:Edge/FlashAttention3.*fp16_hd256_varlen_empty*:Edge/FlashAttention3.*fp16_hd256_window_333' 120
t random01 'Random/FlashAttention3.*/r0*:Random/FlashAttention3.*/r1*' 200
for c in bf16_hd64_persistent_causal_b24_200 bf16_hd128_persistent_varlen_window; do
  timeout 70 compute-sanitizer --tool racecheck --error-exitcode 7 ./bin/attnrt_gpu_tests --gtest_filter="Edge/FlashAttention3.*/$c" > $O/racecheck_$c.txt 2>&1
  echo "racecheck $c rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $O/racecheck_$c.txt | head -3
done
cd ${OUT:-/tmp/o} && tar czf fa3b.tgz fa3b && rm -rf fa3b
