#!/usr/bin/env bash
# Issue 15: flex_attention's host path trimmed (modules found by the mods' identity instead of
# their translation unit, shared-memory attributes and the SM count asked once, the Hopper
# forward's tile counter zeroed by the block-state kernel instead of a memset), against main's
# plugin (.gpu/base/, first in ATTNRT_PLUGIN_PATH), alternated, two rounds: attnrt_flex_bench
# --hdim 128,64 --seqlen 2048 (synchronized ms, host us a call, pipelined ms). Then the flex GPU
# tests on the new plugin: the bf16 forward cases (both forwards) and the bf16 hd64 backward cases.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_host3
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call3; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
BASE=$PWD/base
timeout 100 bin/attnrt_flex_bench --hdim 128,64 --seqlen 2048 --csv $O/warm.csv > $O/warm.txt 2>&1; echo "warm rc=$?"
for r in 1 2; do
  timeout 40 bin/attnrt_flex_bench --hdim 128,64 --seqlen 2048 --csv $O/new_$r.csv > $O/new_$r.txt 2>&1; echo "new $r rc=$?"
  ATTNRT_PLUGIN_PATH=$BASE timeout 40 bin/attnrt_flex_bench --hdim 128,64 --seqlen 2048 --csv $O/base_$r.csv > $O/base_$r.txt 2>&1; echo "base $r rc=$?"
done
for f in new_1 base_1 new_2 base_2; do echo "== $f"; cut -d, -f1,2,6,7,10 $O/$f.csv | sed 's/prepare [0-9.]* ms; //'; done
summary() { grep -E "^\[  (PASSED|FAILED)|FAILED  \]" "$1" | head -20; echo "OK: $(grep -c '^\[       OK' "$1")"; }
timeout 150 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Forward*bf16*' > $O/flex_forward.txt 2>&1
echo "flex forward rc=$?"; summary $O/flex_forward.txt
timeout 120 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Backward*bf16_hd64*:FlexGpuBlockMask.*:FlexGpuRefusals.*' > $O/flex_backward.txt 2>&1
echo "flex backward rc=$?"; summary $O/flex_backward.txt
cd $O/.. && tar czf call3.tgz call3 && rm -rf call3
