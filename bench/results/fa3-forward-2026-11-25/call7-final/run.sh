#!/usr/bin/env bash
# Issue 13, forward call 7: w3 against dyn4 (dyn2 with the handoff only where tiles are claimed
# from the counter: grids dealt in turn walk their tiles in each warpgroup, as w3), forward only,
# alternated twice; then dyn4 (the staged lib/) forward and backward at FlashAttention's shapes,
# and PyTorch's anchors of the same call; the ratio table.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $O/gpu.txt
for round in 1 2; do
  for v in w3 dyn4; do
    ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 60 ./bin/attnrt bench attnrt.device=cuda --no-backward --backends flash_attention_3 --hdim 64,128,256 --seqlen 2048,4096,8192,16384 --csv $O/ab_${v}_$round.csv > $O/ab_${v}_$round.txt 2>&1
    echo "ab $v $round rc=$?"; cut -d, -f5 $O/ab_${v}_$round.csv | tr '\n' ' '; echo
  done
done
timeout 120 ./bin/attnrt bench attnrt.device=cuda --backends flash_attention_3 --hdim 64,128,256 --seqlen 2048,4096,8192,16384 --csv $O/attnrt_bench.csv > $O/attnrt_bench.txt 2>&1
echo "bench rc=$?"
timeout 240 env OUT=$O python3 torch_sdpa_anchors.py --no-flex --hdim 64,128,256 --seqlen 2048,4096,8192,16384 > $O/anchors.txt 2>&1
echo "anchors rc=$?"
python3 bench_join.py $O/attnrt_bench.csv $O/anchors.csv > $O/ratios.txt 2>&1; head -80 $O/ratios.txt
cd ${OUT:-/tmp/o} && tar czf fa3.tgz fa3 && rm -rf fa3
