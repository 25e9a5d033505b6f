#!/usr/bin/env bash
# Issue 13, forward call 3: three forwards, forward only, alternated twice: main's, the
# persistent one (pers) and pers with FlashAttention-3's head_dim 64 tile (w3: 192 query rows on
# three consumer warpgroups, 128-key blocks). Then w3 (the staged lib/) on FA3's edge grid, the
# sink grids (sink runs the same forward) and the random cases r000-r099.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
for round in 1 2; do
  for v in main pers w3; do
    ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 60 ./bin/attnrt bench attnrt.device=cuda --no-backward --backends flash_attention_3 --hdim 64,128 --seqlen 2048,4096,8192,16384 --csv $O/ab_${v}_$round.csv > $O/ab_${v}_$round.txt 2>&1
    echo "ab $v $round rc=$?"; cut -d, -f5 $O/ab_${v}_$round.csv | tr '\n' ' '; echo
  done
done
t() {  # name filter timeout
  timeout $3 ./bin/attnrt_gpu_tests --gtest_filter="$2" > $O/tests_$1.txt 2>&1
  echo "tests $1 rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_$1.txt | tail -6; grep -A5 "Failure" $O/tests_$1.txt | head -12
}
t edge 'Edge/FlashAttention3.*:FlashAttention3Support.*' 150
t sink 'Sink/SinkGrid.*:Sink/SinkEdgeGrid.*:SinkPlugin.*' 80
t random0 'Random/FlashAttention3.*/r0*' 150
cd ${OUT:-/tmp/o} && tar czf fa3.tgz fa3 && rm -rf fa3
