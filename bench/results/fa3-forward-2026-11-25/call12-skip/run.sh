#!/usr/bin/env bash
# Issue 13, forward call 12: a consumer warpgroup skips the leading key blocks none of its rows
# sees (causal: the tile's last blocks for its first rows), taking only their turns and handing
# their buffers back. prev = the landed kernel (call 9), new = the staged lib/; forward only,
# alternated; then new on FA3's edge grid, the sink grids, random r000-r099, racecheck on the
# causal persistent case.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
for round in 1 2; do
  for v in prev new; do
    P=$PWD/variants/prev; [ $v = new ] && P=$PWD/lib/attnrt/plugins
    ATTNRT_PLUGIN_PATH=$P timeout 40 ./bin/attnrt bench attnrt.device=cuda --no-backward --backends flash_attention_3 --hdim 64,128 --seqlen 2048,4096,8192 --csv $O/ab_${v}_$round.csv > $O/ab_${v}_$round.txt 2>&1
    echo "ab $v $round rc=$?"; cut -d, -f5 $O/ab_${v}_$round.csv | tr '\n' ' '; echo
  done
done
t() {  # name filter timeout
  timeout $3 ./bin/attnrt_gpu_tests --gtest_filter="$2" > $O/tests_$1.txt 2>&1
  echo "tests $1 rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_$1.txt | tail -6; grep -A5 "Failure" $O/tests_$1.txt | head -12
}
t edge 'Edge/FlashAttention3.*:FlashAttention3Support.*' 180
t sink 'Sink/SinkGrid.*:Sink/SinkEdgeGrid.*:SinkPlugin.*' 45
t random0 'Random/FlashAttention3.*/r0*' 90
timeout 70 compute-sanitizer --tool racecheck --error-exitcode 7 ./bin/attnrt_gpu_tests --gtest_filter='Edge/FlashAttention3.*/bf16_hd64_persistent_causal_b24_200' > $O/racecheck.txt 2>&1
echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $O/racecheck.txt | head -3
cd ${OUT:-/tmp/o} && tar czf fa3.tgz fa3 && rm -rf fa3
