#!/usr/bin/env bash
# Issue 13: the table against PyTorch's cuDNN on the committed kernels (attnrt bench twice, hdim
# 64/128/256, S2k-16k, both masks, around torch_sdpa_anchors.py), then compute-sanitizer racecheck
# on flash_attention_3's kernels over the hd128 cases (call 5's racecheck run met an internal
# sanitizer error in the eager reference's cuBLAS call of the varlen empty/one-token case): that
# case again, the hd128 persistent varlen window, and a plain hd128 case.
set -u
cd "$(dirname "$0")/../../../.gpu"
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
export LD_LIBRARY_PATH=$PWD/lib:$(py_lib nvidia.cudnn):$(py_lib nvidia.cublas):/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call6; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
B="attnrt.device=cuda --hdim 64,128,256 --seqlen 2048,4096,8192,16384 --mask both --backends flash_attention_3,sdpa"
timeout 120 bin/attnrt bench $B --csv $O/bench_1.csv > $O/bench_1.txt 2>&1; echo "bench 1 rc=$?"
OUT=$O timeout 130 python3 torch_sdpa_anchors.py --no-flex --hdim 64,128,256 --seqlen 2048,4096,8192,16384 > $O/anchors.txt 2>&1
echo "anchors rc=$?"
timeout 120 bin/attnrt bench $B --csv $O/bench_2.csv > $O/bench_2.txt 2>&1; echo "bench 2 rc=$?"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
E=Edge/FlashAttention3.MatchesEagerRule
for c in bf16_hd128_varlen_empty_one_token_causal bf16_hd128_persistent_varlen_window bf16_hd128_plain_1000; do
  timeout 70 $SAN --tool racecheck --kernel-name kns=fa3 bin/attnrt_gpu_tests --gtest_filter="$E/$c" > $O/racecheck_$c.txt 2>&1
  echo "racecheck $c rc=$?"; grep -E "RACECHECK SUMMARY|Internal|PASSED|FAILED" $O/racecheck_$c.txt | head -3
done
cd $O/.. && tar czf call6.tgz call6 && rm -rf call6
