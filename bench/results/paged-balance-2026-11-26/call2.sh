#!/usr/bin/env bash
# Issue 17: where 16 x 8k's time goes. ncu (clocks left alone) times paged_attention's attention
# and combine kernels of the default split (2) and of one split at 32 x 8k, and PyTorch's cuDNN
# decode kernel at 16 x 8k; each kernel replayed with the caches flushed (ncu's default).
set -u
cd "$(dirname "$0")/../../../.gpu"
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call2; mkdir -p $O
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,smsp__warps_active.avg.per_cycle_active
N="ncu --clock-control none --metrics $M"
B="bin/attnrt bench attnrt.device=cuda --decode --gqa 8 --page-size 16 --backends paged_attention --iterations 3 --warmup 1"
timeout 120 $N -k regex:"paged|combine" $B --decode-shapes 16x8192 > $O/ncu_paged_16x8k.txt 2>&1; echo "rc=$?"
ATTNRT_PAGED_SPLITS=1 timeout 120 $N -k regex:"paged|combine" $B --decode-shapes 32x8192 > $O/ncu_paged_32x8k_s1.txt 2>&1; echo "rc=$?"
timeout 150 $N -k regex:"cudnn|fmha|flash" --launch-skip 5 --launch-count 6 python3 torch_decode_anchors.py --shapes 16x8192 --gqa 8 > $O/ncu_torch_16x8k.txt 2>&1; echo "rc=$?"
grep -E "^\s+[a-z_]+.*\(|gpu__time|dram__|sm__cyc|warps_active" $O/*.txt | head -120
cd $O/.. && tar czf call2.tgz call2 && rm -rf call2
