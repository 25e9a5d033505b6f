#!/usr/bin/env bash
# Issue 17, call 5: Nsight Compute on one decode call of paged_attention (l2pdl build) and of cuDNN's
# decode through attnrt's sdpa (contiguous NHD cache), 256 x 1k, GQA 8, bf16: launch geometry,
# occupancy, DRAM throughput and warp stall reasons of each kernel.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O/work; mkdir -p $W
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"; $NCU --version | tail -1
SEC="--section LaunchStats --section Occupancy --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section SourceCounters"
B="./bin/attnrt bench attnrt.device=cuda --decode --gqa 8 --iterations 2 --warmup 1"
ATTNRT_PLUGIN_PATH=$PWD/variants/l2pdl timeout 120 $NCU $SEC -k regex:paged_attention_kernel --launch-skip 1 --launch-count 1 \
  $B --decode-shapes 256x1024 --page-size 16 --backends paged_attention > $W/ncu_paged_256x1k.txt 2>&1; echo "ncu paged rc=$?"
ATTNRT_PLUGIN_PATH=$PWD/variants/l2pdl timeout 120 $NCU $SEC -k regex:paged_attention_kernel --launch-skip 1 --launch-count 1 \
  $B --decode-shapes 16x8192 --page-size 16 --backends paged_attention > $W/ncu_paged_16x8k.txt 2>&1; echo "ncu paged 16x8k rc=$?"
timeout 150 $NCU $SEC --launch-skip 3 --launch-count 3 \
  $B --decode-shapes 256x1024 --page-size 0 --backends sdpa > $W/ncu_cudnn_256x1k.txt 2>&1; echo "ncu cudnn rc=$?"
timeout 150 $NCU $SEC --launch-skip 3 --launch-count 3 \
  $B --decode-shapes 16x8192 --page-size 0 --backends sdpa > $W/ncu_cudnn_16x8k.txt 2>&1; echo "ncu cudnn 16x8k rc=$?"
for f in $W/ncu_*.txt; do echo "=== $f"; grep -E "^  [a-zA-Z_].*\(|Grid Size|Block Size|Registers Per|Dynamic Shared|Static Shared|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occ|Duration|Stall|Warp Cycles Per Issued|L2 Hit|Waves Per SM" $f | head -40; done
tar -czf $O/work.tgz -C $O work
rm -rf $W
