#!/usr/bin/env bash
# Issue 15, call 6: at head_dim 64, the Hopper forward's 128-row tiles (two consumer warpgroups,
# committed) against flash_attention_3's own 192-row tiles (three; variants/bm192, a build with
# kRows = 192 at head_dim 64), alternated twice (attnrt_flex_bench, S8192, hd64); then the sink grid
# (its Hopper forward shares forward_body).
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_call6
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call6; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
for r in 1 2; do
  timeout 80 bin/attnrt_flex_bench --hdim 64 --seqlen 8192 --csv $O/bm128_$r.csv > $O/bm128_$r.txt 2>&1; echo "bm128 $r rc=$?"
  ATTNRT_PLUGIN_PATH=$PWD/variants/bm192 timeout 80 bin/attnrt_flex_bench --hdim 64 --seqlen 8192 --csv $O/bm192_$r.csv > $O/bm192_$r.txt 2>&1; echo "bm192 $r rc=$?"
done
paste -d, <(cut -d, -f2,7 $O/bm128_2.csv) <(cut -d, -f7 $O/bm192_2.csv)
timeout 120 bin/attnrt_gpu_tests --gtest_filter='Sink/SinkGrid.*' > $O/sink.txt 2>&1
echo "sink rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/sink.txt | head -10
cd $O/.. && tar czf call6.tgz call6 && rm -rf call6
