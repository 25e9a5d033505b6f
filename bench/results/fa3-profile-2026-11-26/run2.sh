#!/usr/bin/env bash
# Issue 13, call 2: what the issue asks for and no earlier call ran on the current kernels:
# `attnrt check flash_attention_3` (the conformance kit) on the GPU, compute-sanitizer synccheck
# on a reduced grid (the persistent dealt, claimed and varlen-window cases, forward and
# backward), and memcheck on two of them; the sanitizers watch flash_attention_3's kernels only
# (--kernel-regex kns=fa3; the tests' CUDA eager baseline runs cuBLAS). From .gpu/.
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/fa3san; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
timeout 150 bin/attnrt check flash_attention_3 attnrt.device=cuda > $O/check.txt 2>&1
echo "check rc=$?"; tail -5 $O/check.txt
CS=/usr/local/cuda/bin/compute-sanitizer
F='Edge/FlashAttention3.MatchesEagerRule/bf16_hd64_persistent_causal_b24_200:Edge/FlashAttention3.MatchesEagerRule/bf16_hd128_persistent_plain_b24_200:Edge/FlashAttention3.MatchesEagerRule/bf16_hd128_persistent_varlen_window'
timeout 240 $CS --tool synccheck --kernel-regex kns=fa3 --error-exitcode 7 bin/attnrt_gpu_tests --gtest_filter="$F" > $O/synccheck.txt 2>&1
echo "synccheck rc=$?"; tail -3 $O/synccheck.txt
timeout 150 $CS --tool memcheck --kernel-regex kns=fa3 --error-exitcode 7 bin/attnrt_gpu_tests \
  --gtest_filter='Edge/FlashAttention3.MatchesEagerRule/bf16_hd64_persistent_causal_b24_200:Edge/FlashAttention3.MatchesEagerRule/bf16_hd128_persistent_varlen_window' > $O/memcheck.txt 2>&1
echo "memcheck rc=$?"; tail -3 $O/memcheck.txt
cd $O/.. && tar czf fa3san.tgz fa3san && rm -rf fa3san
