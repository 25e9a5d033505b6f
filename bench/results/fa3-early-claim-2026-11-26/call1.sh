#!/usr/bin/env bash
# Issues 13 and 15: flash_attention_3's claimed-tile forward (causal, windows, varlen, and
# flex_attention's block-sparse walk) with the next tile's claim issued when a tile starts, not
# when its last loads are out, against the same plugins built from main before the change
# (.gpu/base/, first in ATTNRT_PLUGIN_PATH so it shadows the built-in ones), alternated, two
# rounds, in one call:
#   attnrt bench: flash_attention_3 and cuDNN (attnrt's sdpa plugin runs cuDNN's fused
#     attention), hd64/hd128, S2048/S4096, causal, forward only (bf16, 16k tokens, hidden 2048);
#   attnrt_flex_bench: every mod and flash_attention_3's built-in causal, hd64/hd128, S2048/S8192.
# Then the tests the change touches: flash_attention_3's edge grid (hd64, hd128), the flex forward
# cases and the sink grid.
set -u
cd "$(dirname "$0")/../../../.gpu"
cudnn_dir=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn_dir:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_ec1
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
BASE=$PWD/base
ATTNRT_PLUGIN_PATH=$BASE bin/attnrt list > $O/list_base.txt 2>&1; bin/attnrt list > $O/list_new.txt 2>&1
grep -E "flash_attention_3|flex_attention" $O/list_base.txt $O/list_new.txt | head
B="attnrt.device=cuda --hdim 64,128 --seqlen 2048,4096 --mask causal --no-backward"
for r in 1 2; do
  timeout 60 bin/attnrt bench $B --backends flash_attention_3,sdpa --csv $O/bench_new_$r.csv > $O/bench_new_$r.txt 2>&1
  echo "bench new $r rc=$?"
  ATTNRT_PLUGIN_PATH=$BASE timeout 60 bin/attnrt bench $B --backends flash_attention_3,sdpa --csv $O/bench_base_$r.csv > $O/bench_base_$r.txt 2>&1
  echo "bench base $r rc=$?"
done
for r in 1 2; do
  timeout 70 bin/attnrt_flex_bench --hdim 64,128 --seqlen 2048,8192 --csv $O/flex_new_$r.csv > $O/flex_new_$r.txt 2>&1
  echo "flex new $r rc=$?"
  ATTNRT_PLUGIN_PATH=$BASE timeout 70 bin/attnrt_flex_bench --hdim 64,128 --seqlen 2048,8192 --csv $O/flex_base_$r.csv > $O/flex_base_$r.txt 2>&1
  echo "flex base $r rc=$?"
done
python3 ab.py $O > $O/ab.md 2>&1; cat $O/ab.md
summary() { grep -E "^\[  (PASSED|FAILED)|FAILED  \]" "$1" | head -20; echo "OK: $(grep -c '^\[       OK' "$1")"; }
timeout 100 bin/attnrt_gpu_tests --gtest_filter='Edge/FlashAttention3.*hd64*:Edge/FlashAttention3.*hd128*:Sink/SinkGrid.*' > $O/fa3_sink.txt 2>&1
echo "fa3/sink rc=$?"; summary $O/fa3_sink.txt
timeout 120 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Forward*bf16*' > $O/flex_forward.txt 2>&1
echo "flex forward rc=$?"; summary $O/flex_forward.txt
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
