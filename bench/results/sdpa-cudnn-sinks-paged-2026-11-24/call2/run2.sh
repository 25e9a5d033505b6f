#!/usr/bin/env bash
# Issue 16, call 2: the paged GPU tests again with the plugin fixed after call 1 (cuDNN wants its
# page table exactly ceil(s_kv / page_size) wide: block_table's first columns are now copied
# compact into the workspace, -1 as page 0). Same staging as run.sh (variants/branch replaced by
# the fixed plugin). bf16 cases (head_dim 64 and 128: 22 cases) first, then fp16 while time lasts.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
T=./bin/attnrt_gpu_tests
ATTNRT_PLUGIN_PATH=$PWD/variants/branch timeout 75 $T --gtest_filter='Sdpa/SdpaCudaPaged.*/bf16_*' > $O/paged_bf16.txt 2>&1
echo "paged bf16 rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED|Failure|exception" $O/paged_bf16.txt | head -30
ATTNRT_PLUGIN_PATH=$PWD/variants/branch timeout 45 $T --gtest_filter='Sdpa/SdpaCudaPaged.*/fp16_*' > $O/paged_fp16.txt 2>&1
echo "paged fp16 rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED|Failure|exception" $O/paged_fp16.txt | head -30
