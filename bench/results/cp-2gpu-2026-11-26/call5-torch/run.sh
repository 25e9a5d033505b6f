#!/usr/bin/env bash
# Issue 20, two-GPU call 5: attnrt.torch.context_parallel_attention under torchrun against torch's
# SDPA (tests/gpu/cp_torch_check.py via tools/gpu_cp_check.sh), with the staged package's
# libattnrt replaced by the GPU build's (call 4's wheel libattnrt, built with ATTNRT_CUDA=OFF, had
# no CUDA BlockOps and every case was refused with that reason).
#   device tool: kind nvidia-h100-x2, carry [".gpu-py"], command "bash <this file>"
O="${OUT:-/tmp/o}"
bash tools/gpu_cp_check.sh > /dev/null 2>&1
echo "torch check rc=$?"
grep -v "^W1126\|^\s*$" "$O/cp_torch_check.txt" | grep -v "attention backend:" | tail -30
