#!/usr/bin/env bash
# Issue 13, forward call 10: ncu of the landed forward at head_dim 64, S2048, causal (0.83x
# cuDNN) and full (1.04x): speed of light, compute pipes (tensor), warp states, launch.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3; mkdir -p $O
for mask in causal none; do
  timeout 100 ncu --clock-control none -k regex:forward_kernel -c 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy \
    ./bin/attnrt bench attnrt.device=cuda --no-backward --backends flash_attention_3 --hdim 64 --seqlen 2048 --mask $mask --warmup 0 --iterations 1 > $O/ncu_hd64_S2048_$mask.txt 2>&1
  echo "ncu $mask rc=$?"; grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|Tensor|Warp Cycles Per Issued|No Eligible|Grid Size|Stall" $O/ncu_hd64_S2048_$mask.txt | tr -s ' ' | head -20
done
cd ${OUT:-/tmp/o} && tar czf fa3.tgz fa3 && rm -rf fa3
