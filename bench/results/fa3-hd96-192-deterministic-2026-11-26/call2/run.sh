#!/usr/bin/env bash
# Issue 13, 2026-11-26 (third session), call 2: the forward at head_dim 96 (padded onto the 128
# kernel) and 192 (64-key blocks; variant bn96: 96-key blocks), 128 beside them, with
# flash_attention_2 and PyTorch's anchors in the same call; hidden 2016 / 2048 / 1920 so that
# heads = hidden / head_dim match the anchors' (21, 16, 10). Then the padded random grid and
# the hd192 edge grid on the variant.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3e; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
b() {  # name, plugin path or "", args
  local n=$1 pp=$2; shift 2
  ATTNRT_PLUGIN_PATH=$pp timeout 90 ./bin/attnrt bench attnrt.device=cuda --no-backward --seqlen 2048,4096,8192 "$@" --csv $O/bench_$n.csv > $O/bench_$n.txt 2>&1
  echo "bench $n rc=$?"
}
for round in 1 2; do
  b hd96_$round "" --backends flash_attention_3,flash_attention_2 --hdim 96 --hidden 2016
  b hd128_$round "" --backends flash_attention_3 --hdim 128
  b hd192_$round "" --backends flash_attention_3,flash_attention_2 --hdim 192 --hidden 1920
  b hd192_bn96_$round $PWD/variants/bn96 --backends flash_attention_3 --hdim 192 --hidden 1920
  [ $round = 1 ] && { timeout 200 env OUT=$O python3 torch_sdpa_anchors.py --no-flex --hdim 96,128,192 --seqlen 2048,4096,8192 > $O/anchors.txt 2>&1; echo "anchors rc=$?"; }
done
for f in $O/bench_*.csv; do python3 bench_join.py $f $O/anchors.csv > ${f%.csv}_ratios.txt 2>&1; done
t() {  # name filter timeout [plugin path]
  ATTNRT_PLUGIN_PATH=$4 timeout $3 ./bin/attnrt_gpu_tests --gtest_filter="$2" > $O/tests_$1.txt 2>&1
  echo "tests $1 rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_$1.txt | tail -6; grep -B2 -A6 "Failure" $O/tests_$1.txt | head -30
}
t rand_new 'RandomHd96Hd192/FlashAttention3.*' 100
t edge192_bn96 'Edge/FlashAttention3.*hd192*:RandomHd96Hd192/FlashAttention3.*hd192*' 100 $PWD/variants/bn96
cd ${OUT:-/tmp/o} && tar czf fa3e.tgz fa3e && rm -rf fa3e
