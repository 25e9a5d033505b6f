#!/usr/bin/env bash
# Issue 15: which CUDA API calls make flex_attention's forward take 25-44 us of host time a call
# (flash_attention_3: 7-10): nsys's CUDA API summary over attnrt_flex_bench --hdim 128 --seqlen
# 2048 (every mod, then flash_attention_2/3's built-in causal), the disk cache warm from a first run.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_host
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call2; mkdir -p $O
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: $NSYS"
timeout 60 bin/attnrt_flex_bench --hdim 128 --seqlen 2048 --csv $O/warm.csv > $O/warm.txt 2>&1; echo "warm rc=$?"
cd $O && timeout 150 $NSYS profile --trace=cuda,nvtx --sample=none --cpuctxsw=none -o flex_host \
  $OLDPWD/bin/attnrt_flex_bench --hdim 128 --seqlen 2048 > nsys_run.txt 2>&1; echo "nsys rc=$?"
timeout 60 $NSYS stats --report cuda_api_sum --format csv -o api flex_host.nsys-rep > stats.txt 2>&1; echo "stats rc=$?"
ls; head -30 api_cuda_api_sum.csv 2>/dev/null
rm -f flex_host.nsys-rep flex_host.sqlite
cd .. && tar czf call2.tgz call2 && rm -rf call2
