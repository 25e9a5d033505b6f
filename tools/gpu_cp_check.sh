#!/usr/bin/env bash
# On a machine with two GPUs of one host: attnrt.torch.context_parallel_attention against torch's
# SDPA (tests/gpu/cp_torch_check.py under torchrun, one process per GPU), with the package that
# tools/gpu_stage_python.sh staged in .gpu-py/. Arguments go to the check
# (--implementations, --seqlens, --causal, --layout, --varlen). Output also in $OUT/cp_torch_check.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
# NVLink multicast stays off (the GPU machines' rule; the check sets the same itself).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
export LD_LIBRARY_PATH=$PWD/.gpu-py/lib:$(py_lib nvidia.cudnn):$(py_lib nvidia.cublas):/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/.gpu-py/python PYTHONUNBUFFERED=1
chmod -R go-w .gpu-py 2>/dev/null
O=${OUT:-/tmp/o}
mkdir -p "$O"
nvidia-smi -L
timeout 540 torchrun --nproc-per-node 2 tests/gpu/cp_torch_check.py "$@" 2>&1 | tee "$O/cp_torch_check.txt"
exit "${PIPESTATUS[0]}"
