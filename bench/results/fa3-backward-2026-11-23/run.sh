#!/usr/bin/env bash
# Session run 3 (final): threads GPU test, sink both families, FA3 (7c9311e kernel) edge + random subset, racecheck, sink/FA3 gpt-oss bench, FA2/FA3 + anchors.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
t() { echo "== $1"; shift; timeout "$@"; echo "rc=$?"; }
t "threads+support+sink" 120 ./bin/attnrt_gpu_tests --gtest_filter='HostApiThreadsGpu.*:FlashAttention3Support.*:SinkPlugin.*:Sink/*' > $O/tests_a.txt 2>&1
grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_a.txt | tail -12
grep -A6 "Failure" $O/tests_a.txt | head -24
t "fa3 edge+random" 150 ./bin/attnrt_gpu_tests --gtest_filter='Edge/FlashAttention3.*:Random/FlashAttention3.*/r0[5-9]*:-*mqa_causal_4097:*_1000' > $O/tests_b.txt 2>&1
grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_b.txt | tail -12
grep -A6 "Failure" $O/tests_b.txt | head -24
t racecheck 45 compute-sanitizer --tool racecheck --error-exitcode 7 ./bin/attnrt_gpu_tests --gtest_filter='Edge/FlashAttention3.*/bf16_hd64_gqa4_causal_129:Edge/FlashAttention3.*/fp16_hd128_window_333' > $O/racecheck.txt 2>&1
grep -E "RACECHECK SUMMARY|PASSED|FAILED" $O/racecheck.txt | head -3
B="./bin/attnrt bench attnrt.device=cuda --hdim 64 --hidden 4096 --heads-kv 8 --seqlen 4096,16384 --mask causal"
t "gptoss bench" 80 sh -c "$B --backends sink --sinks --csv /tmp/gptoss_sink.csv > /tmp/gptoss_sink.txt 2>&1; $B --backends flash_attention_3 --csv /tmp/gptoss_fa3.csv > /tmp/gptoss_fa3.txt 2>&1; $B --backends sink --sinks --window 127 --csv /tmp/gptoss_sink_w.csv > /tmp/gptoss_sink_w.txt 2>&1; $B --backends flash_attention_3 --window 127 --csv /tmp/gptoss_fa3_w.csv > /tmp/gptoss_fa3_w.txt 2>&1"
(cat /tmp/gptoss_sink.csv; for f in fa3 sink_w fa3_w; do tail -n +2 /tmp/gptoss_$f.csv; done) > $O/gptoss_bench.csv; cat $O/gptoss_bench.csv; tail -3 /tmp/gptoss_fa3_w.txt
t "bench" 100 ./bin/attnrt bench attnrt.device=cuda --backends flash_attention_3,flash_attention_2 --hdim 64,128 --seqlen 2048,8192 --csv $O/attnrt_bench.csv > /tmp/attnrt_bench.txt 2>&1
t "anchors" 110 env OUT=$O python3 torch_sdpa_anchors.py --no-flex --hdim 64,128 --seqlen 2048,8192 > $O/anchors.txt 2>&1
python3 bench_join.py $O/attnrt_bench.csv $O/anchors.csv > $O/ratios.txt 2>&1; cat $O/ratios.txt | head -40
