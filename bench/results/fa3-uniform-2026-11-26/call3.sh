#!/usr/bin/env bash
# Issues 13 and 15, call 1's kernels: flash_attention_3 against cuDNN on FlashAttention's shapes
# from 2k tokens (attnrt bench, with attnrt's sdpa plugin on cuDNN and PyTorch's cuDNN and flash
# backends timed by torch_sdpa_anchors.py in the same call; two rounds of attnrt bench around
# the anchors); flex_attention at hd64 S8192 against PyTorch's compiled flex (the forward rows
# short of 1.1x before); compute-sanitizer synccheck and racecheck on flash_attention_3's kernels.
set -u
cd "$(dirname "$0")/../../../.gpu"
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
export LD_LIBRARY_PATH=$PWD/lib:$(py_lib nvidia.cudnn):$(py_lib nvidia.cublas):/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_uniform3
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call3; mkdir -p $O
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
B="attnrt.device=cuda --hdim 64,128,256 --seqlen 2048,4096,8192,16384 --mask both --backends flash_attention_3,sdpa"
timeout 110 bin/attnrt bench $B --csv $O/bench_1.csv > $O/bench_1.txt 2>&1; echo "bench 1 rc=$?"
OUT=$O timeout 120 python3 torch_sdpa_anchors.py --no-flex --hdim 64,128,256 --seqlen 2048,4096,8192,16384 > $O/anchors.txt 2>&1; echo "anchors rc=$?"
timeout 110 bin/attnrt bench $B --csv $O/bench_2.csv > $O/bench_2.txt 2>&1; echo "bench 2 rc=$?"
F="--hdim 64 --seqlen 8192 --mods causal,sliding_window_256,prefix_lm,document_mask,alibi,dense,block_sparse_90 --reps 20"
timeout 90 bin/attnrt_flex_bench $F --csv $O/flex.csv > $O/flex.txt 2>&1; echo "flex rc=$?"
timeout 100 python3 torch_flex_anchors.py --hdim 64 --seqlen 8192 --csv $O/torch_flex.csv > $O/torch_flex.txt 2>&1; echo "torch flex rc=$?"
python3 flex_ratios.py $O/flex.csv $O/torch_flex.csv > $O/flex_ratios.md 2>&1; grep "| forward" $O/flex_ratios.md
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
CASES='Edge/FlashAttention3.MatchesEagerRule/bf16_hd64_window_333:Edge/FlashAttention3.MatchesEagerRule/bf16_hd64_persistent_varlen_window'
for tool in synccheck racecheck; do
  timeout 60 $SAN --tool $tool --kernel-regex kns=fa3 bin/attnrt_gpu_tests --gtest_filter="$CASES" > $O/sanitizer_$tool.txt 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $O/sanitizer_$tool.txt | head -4
done
ls $O
cd $O/.. && tar czf call3.tgz call3 && rm -rf call3
