#!/usr/bin/env bash
# Issue 13, call 5: flash_attention_3's backward at head_dim 96, 192 and 256 through
# flash_attention_2's kernels inside the plugin (the rule against the fp64 reference).
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3b; mkdir -p $O
timeout 125 ./bin/attnrt_gpu_tests --gtest_filter='FlashAttention3Support.*:Edge/FlashAttention3.*/bf16_hd256_*:Edge/FlashAttention3.*/fp16_hd96_*:RandomHd96Hd192/FlashAttention3.*' > $O/tests.txt 2>&1
echo "rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests.txt | tail -8; grep -c "^\[       OK" $O/tests.txt
cd ${OUT:-/tmp/o} && tar czf fa3b.tgz fa3b && rm -rf fa3b
