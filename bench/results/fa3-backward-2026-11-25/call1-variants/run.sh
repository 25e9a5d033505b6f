#!/usr/bin/env bash
# Issue 13, call 1: flash_attention_3 backward variants. old = main (ddae429); a = dQ by bulk
# reduce-add from a writer warp + loop-variant addresses (no spills); b = a + S^T/dP^T in two
# groups with P^T under dP^T and dS^T under dV. Tests on b and a, then A/B bench, then anchors.
# (Only 8 of the output files came back: the device tool returns a bounded number of files; the
# old variant's CSVs, the round-2 CSV of b and the test logs were left out. The test summaries
# are in this call's output, quoted in docs/perf.md: 90/90 edge cases passed on a and on b.)
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for v in b a; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 110 ./bin/attnrt_gpu_tests --gtest_filter='Edge/FlashAttention3.*:-*_4097:*_1000' > $O/tests_$v.txt 2>&1
  echo "tests $v rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_$v.txt | tail -6; grep -A5 "Failure" $O/tests_$v.txt | head -12
done
for round in 1 2; do
  for v in old a b; do
    ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 60 ./bin/attnrt bench attnrt.device=cuda --backends flash_attention_3 --hdim 64,128 --seqlen 2048,8192 --csv $O/bench_${v}_$round.csv > $O/bench_${v}_$round.txt 2>&1
    echo "bench $v $round rc=$?"
  done
done
timeout 150 env OUT=$O python3 torch_sdpa_anchors.py --no-flex --hdim 64,128 --seqlen 2048,8192 > $O/anchors.txt 2>&1
echo "anchors rc=$?"
