#!/usr/bin/env bash
# Issue 20, two-GPU call 6: the ring over packed varlen batches (16k + 32k + 80k tokens, 32/8 heads,
# hd128, bf16; flash_attention_2 and _3; causal and full, zigzag, and causal contiguous), the
# two-GPU test's checks (a) and (b) as for the other cases. Staged by tools/gpu_cp_stage.sh; this
# file copied to .gpu-cp/run_varlen.sh; device tool: kind nvidia-h100-x2, carry [".gpu-cp"].
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-/tmp/o}/call6"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
chmod -R go-w "$here" 2> /dev/null || true
nccl=$(python3 -c "import nvidia.nccl, os, glob; print(glob.glob(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so*'))[0])" 2> /dev/null || true)
export ATTNRT_NCCL_LIBRARY="$nccl"
export LD_LIBRARY_PATH="$here/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=index,name --format=csv,noheader | tee "$out/machine.txt"
timeout -k 10 240 "$here/bin/attnrt_cp_2gpu_test" --out "$out/varlen" --filter varlen --deadline-s 230 2>&1 | tee "$out/varlen.txt"
echo "rc=${PIPESTATUS[0]}"
lines=$(grep -E "^\[rank [01]\] [a-z0-9_]+ +r[01] (PASS|FAIL)" "$out/varlen.txt")
echo "case lines: $(echo "$lines" | grep -c " PASS") PASS, $(echo "$lines" | grep -c " FAIL") FAIL"
echo "$lines" | grep " FAIL" | cut -c1-400
cd "${OUT:-/tmp/o}" && tar czf call6.tgz call6 && rm -rf call6
