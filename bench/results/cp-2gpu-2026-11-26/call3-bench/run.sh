#!/usr/bin/env bash
# Issue 20, two-GPU call 3: the speed of ring attention (attnrt bench --context-parallel 2,
# flash_attention_3 as the local kernel) against one GPU on the same whole sequence, and
# attnrt.torch.context_parallel_attention under torchrun against torch's SDPA.
#   device tool: kind nvidia-h100-x2, carry [".gpu-cp", ".gpu-py"], command
#   "bash .gpu-cp/run_bench.sh" (tools/gpu_cp_stage.sh and tools/gpu_stage_python.sh staged them;
#   this file is copied to .gpu-cp/run_bench.sh)
# Shapes: the issue's, hd128, bf16, 32 query heads (hidden 4096) / 8 KV heads, batch 1, 128k and
# 256k tokens, causal and full, forward and backward; median of 5 after 1 warm-up (a 256k causal
# backward on one GPU takes over 2 s).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
O="${OUT:-/tmp/o}/call3"
mkdir -p "$O"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
chmod -R go-w "$here" 2> /dev/null || true
nccl=$(python3 -c "import nvidia.nccl, os, glob; print(glob.glob(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so*'))[0])" 2> /dev/null || true)
[ -z "$nccl" ] && nccl=$(ls /usr/local/cuda/lib*/libnccl.so.2 /usr/lib/x86_64-linux-gnu/libnccl.so.2 2> /dev/null | head -1)
export ATTNRT_NCCL_LIBRARY="$nccl"
{
  echo "libnccl: $nccl"
  nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,memory.total --format=csv
} 2>&1 | tee "$O/machine.txt"
echo "=== attnrt bench --context-parallel 2"
LD_LIBRARY_PATH="$here/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" timeout -k 10 330 "$here/bin/attnrt" bench \
  --context-parallel 2 --backends flash_attention_3 --hdim 128 --hidden 4096 --heads-kv 8 \
  --seqlen 131072,262144 --warmup 1 --iterations 5 --csv "$O/cp_bench.csv" 2>&1 | tee "$O/cp_bench.txt"
echo "bench rc=${PIPESTATUS[0]}"
echo "=== attnrt.torch.context_parallel_attention under torchrun"
cd "$here/.." && OUT="$O" timeout -k 10 200 bash tools/gpu_cp_check.sh > /dev/null 2>&1
echo "torch check rc=$?"; tail -25 "$O/cp_torch_check.txt"
cd "${OUT:-/tmp/o}" && tar czf call3.tgz call3 && rm -rf call3
