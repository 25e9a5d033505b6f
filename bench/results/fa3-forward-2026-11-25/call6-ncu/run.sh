#!/usr/bin/env bash
# Issue 13, forward call 6: ncu of w3 against dyn2 on hd64 S2048 full (dyn2 11% slower there
# in call 5 though its main loop matches w3's): speed of light, warp states, scheduler, memory.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}/fa3; mkdir -p $O
for v in w3 dyn2; do
  for hd in 64 128; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 100 ncu --clock-control none -k regex:forward_kernel -c 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats \
    ./bin/attnrt bench attnrt.device=cuda --no-backward --backends flash_attention_3 --hdim $hd --seqlen 2048 --mask none --warmup 0 --iterations 1 > $O/ncu_${v}_hd$hd.txt 2>&1
  echo "ncu $v $hd rc=$?"; grep -E "Duration|Compute \(SM\) Throughput|L2 Hit Rate|DRAM Throughput|Warp Cycles Per Issued|Issued Warp Per|No Eligible|Grid Size|Registers Per" $O/ncu_${v}_hd$hd.txt | tr -s ' '
  done
done
cd ${OUT:-/tmp/o} && tar czf fa3.tgz fa3 && rm -rf fa3
