#!/usr/bin/env bash
# Issue 13, 2026-11-26 call 1: the skip of 2026-11-25's call12-skip, now in the claimed-tile
# kernel only (branch fa3-skip-claimed): prev = main's plugin (variants/prev), new = the staged
# lib/. Forward A/B alternated twice with PyTorch's anchors between, then new on FA3's edge grid
# and the sink grids. Run from .gpu/ (carry [".gpu"]).
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
ab() {
  for v in prev new; do
    P=$PWD/variants/prev; [ $v = new ] && P=$PWD/lib/attnrt/plugins
    ATTNRT_PLUGIN_PATH=$P timeout 50 ./bin/attnrt bench attnrt.device=cuda --no-backward --backends flash_attention_3 --hdim 64,128 --seqlen 2048,4096,8192 --csv $O/ab_${v}_$1.csv > $O/ab_${v}_$1.txt 2>&1
    echo "ab $v $1 rc=$?"; cut -d, -f5 $O/ab_${v}_$1.csv | tr '\n' ' '; echo
  done
}
ab 1
timeout 120 env OUT=$O python3 torch_sdpa_anchors.py --no-flex --hdim 64,128 --seqlen 2048,4096,8192 > $O/anchors.txt 2>&1
echo "anchors rc=$?"; tail -3 $O/anchors.txt
ab 2
for r in 1 2; do python3 bench_join.py $O/ab_new_$r.csv $O/anchors.csv > $O/ratios_new_$r.txt 2>&1; python3 bench_join.py $O/ab_prev_$r.csv $O/anchors.csv > $O/ratios_prev_$r.txt 2>&1; done
paste <(awk '{print $1, $3, $7}' $O/ratios_prev_1.txt) <(awk '{print $7}' $O/ratios_new_1.txt) <(awk '{print $7}' $O/ratios_prev_2.txt) <(awk '{print $7}' $O/ratios_new_2.txt) | grep -v n/a | column -t
t() {  # name filter timeout
  timeout $3 ./bin/attnrt_gpu_tests --gtest_filter="$2" > $O/tests_$1.txt 2>&1
  echo "tests $1 rc=$?"; grep -E "^\[  FAILED|tests? from .* ran|PASSED" $O/tests_$1.txt | tail -6; grep -A5 "Failure" $O/tests_$1.txt | head -12
}
t edge 'Edge/FlashAttention3.*:FlashAttention3Support.*' 230
t sink 'Sink/SinkGrid.*:Sink/SinkEdgeGrid.*:SinkPlugin.*' 60
cd ${OUT:-/tmp/o} && tar czf fa3.tgz fa3 && rm -rf fa3
