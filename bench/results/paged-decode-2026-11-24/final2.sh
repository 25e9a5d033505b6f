#!/usr/bin/env bash
# Issue 17, call 13: the kernel to commit (K/V rows swizzled, not padded; split count from the 96%
# rule), against PyTorch's decode anchors in the same call (two rounds), then the paged tests, and
# the flex_attention GPU tests (its NVRTC build embeds warp_gemm.cuh, which gained SwizzledRows).
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
export ATTNRT_CACHE_DIR=/tmp/attnrt-flex-cache
O=${OUT:-/tmp/o}; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $O/gpu.txt 2>&1
B="./bin/attnrt bench attnrt.device=cuda --decode --page-size 16,64 --kv-layout nhd,hnd"
timeout 60 $B --backends paged_attention --csv $O/decode_bench_r1.csv > /dev/null 2>&1; echo "bench r1 rc=$?"
OUT=$O timeout 100 python3 torch_decode_anchors.py > $O/decode_anchors.txt 2>&1; echo "anchors rc=$?"
timeout 60 $B --backends paged_attention --csv $O/decode_bench_r2.csv > /dev/null 2>&1; echo "bench r2 rc=$?"
python3 decode_ratios.py $O/decode_bench_r1.csv $O/decode_anchors.csv $O/ratios_r1.csv > $O/ratios_r1.md 2>&1
python3 decode_ratios.py $O/decode_bench_r2.csv $O/decode_anchors.csv > $O/ratios_r2.md 2>&1
paste -d'|' <(grep -E "^\| decode" $O/ratios_r1.md | cut -d'|' -f2,4,6 | sed 's/decode_D128_//') <(grep -E "^\| decode" $O/ratios_r2.md | cut -d'|' -f4,6)
tail -1 $O/ratios_r1.md; tail -1 $O/ratios_r2.md
timeout 150 ./bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $O/paged_tests.txt 2>&1
echo "paged tests rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED" $O/paged_tests.txt | tail -6
timeout 200 ./bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.*:FlexGpuRefusals.*' > $O/flex_tests.txt 2>&1
echo "flex tests rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED" $O/flex_tests.txt | tail -6
