#!/usr/bin/env bash
# Issue 13, 2026-11-26 (third session): flash_attention_3 forward at head_dim 96 (padded onto the
# 128 kernel by TMA's zero fill) and 192 (its own kernel), and the deterministic backward (dQ's
# additions ordered per query block). Bench first (with PyTorch's anchors), then the tests.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3d; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
b() {  # name, args
  local n=$1; shift
  timeout 90 ./bin/attnrt bench attnrt.device=cuda "$@" --csv $O/bench_$n.csv > $O/bench_$n.txt 2>&1
  echo "bench $n rc=$?"
}
b fwd --no-backward --backends flash_attention_3,flash_attention_2 --hdim 96,128,192 --seqlen 2048,4096,8192
b bwd --no-forward --backends flash_attention_3 --hdim 64,128 --seqlen 2048,8192
b bwd_det --no-forward --deterministic --backends flash_attention_3,flash_attention_2 --hdim 64,128 --seqlen 2048,8192
timeout 150 env OUT=$O python3 torch_sdpa_anchors.py --no-flex --hdim 96,128,192 --seqlen 2048,4096,8192 > $O/anchors.txt 2>&1
echo "anchors rc=$?"
for n in fwd bwd bwd_det; do python3 bench_join.py $O/bench_$n.csv $O/anchors.csv > $O/ratios_$n.txt 2>&1; done
t() {  # name filter timeout
  timeout $3 ./bin/attnrt_gpu_tests --gtest_filter="$2" > $O/tests_$1.txt 2>&1
  echo "tests $1 rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_$1.txt | tail -6; grep -B2 -A6 "Failure" $O/tests_$1.txt | head -30
}
t support 'FlashAttention3Support.*' 60
t det 'Cases/FlashAttention3Deterministic.*' 120
t edge_new 'Edge/FlashAttention3.*hd96*:Edge/FlashAttention3.*hd192*' 170
t rand_new 'RandomHd96Hd192/FlashAttention3.*' 120
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 7 ./bin/attnrt_gpu_tests --gtest_filter='Edge/FlashAttention3.*/bf16_hd96_plain_113:Edge/FlashAttention3.*/bf16_hd96_persistent_varlen_window:Cases/FlashAttention3Deterministic.*/hd64_varlen_causal' > $O/memcheck.txt 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $O/memcheck.txt | head -3
t rand_old 'Random/FlashAttention3.*/r00*:Edge/FlashAttention3.*/bf16_hd128*' 80
cd ${OUT:-/tmp/o} && tar czf fa3d.tgz fa3d && rm -rf fa3d
