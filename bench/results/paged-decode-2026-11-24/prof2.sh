#!/usr/bin/env bash
# Issue 17, call 8: Nsight Compute on cuDNN's decode kernel through attnrt's sdpa (contiguous NHD
# cache), 16 x 8k and 256 x 1k, GQA 8, bf16: its launch geometry, occupancy, DRAM throughput.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
SEC="--section LaunchStats --section Occupancy --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section SourceCounters"
B="./bin/attnrt bench attnrt.device=cuda --decode --gqa 8 --iterations 2 --warmup 1 --backends sdpa --page-size 0"
for shape in 256x1024 16x8192; do
  timeout 200 /usr/local/cuda/bin/ncu $SEC --launch-count 6 $B --decode-shapes $shape > $O/ncu_cudnn_$shape.txt 2>&1; echo "ncu $shape rc=$?"
  grep -E "^  [a-zA-Z_].*\(|Grid Size|Block Size|Registers Per|Dynamic Shared|Static Shared|DRAM Throughput|L2 Hit|L2 Cache Thr|Duration|Achieved Occupancy|Waves Per SM|Cluster Size" $O/ncu_cudnn_$shape.txt | head -60
done
