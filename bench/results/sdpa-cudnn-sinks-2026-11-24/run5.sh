#!/usr/bin/env bash
# Issue 16, call 5: the merged plugin (pointer-array execute, per-thread cache memo) with cuDNN's
# page table now a dense copy whose entries past a sequence's used pages are 0 (never the -1 the
# ABI allows there, never read from block_table): the paged GPU tests (sdpa on every decode case it
# takes), and the sdpa tests other than the grid and random streams.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
ATTNRT_PLUGIN_PATH=$PWD/variants/final timeout 150 ./bin/attnrt_gpu_tests --gtest_filter='*Paged*:SdpaCuda.*' \
  > $O/paged_and_sdpa.txt 2>&1
echo "tests rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED" $O/paged_and_sdpa.txt | tail -8
