#!/usr/bin/env bash
# Issue 15: where flex_attention's S2048 forward spends the time its kernel does not: per mod and
# for flash_attention_2/3's built-in causal, attnrt_flex_bench's synchronized median (ms), the
# host's side of a call (the time forward takes to return) and the GPU's (20 calls back to back),
# hd128 and hd64 at S2048 and S8192.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_host
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
timeout 150 bin/attnrt_flex_bench --hdim 128,64 --seqlen 2048,8192 --csv $O/flex_bench.csv > $O/flex_bench.txt 2>&1
echo "bench rc=$?"; cut -d, -f1,2,5,6,7,10 $O/flex_bench.csv
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
