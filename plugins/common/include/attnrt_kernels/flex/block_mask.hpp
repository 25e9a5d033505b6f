// create_block_mask on the host (ABI 1.4, plugin_abi.h attnrt_block_mask_args): PyTorch's
// create_block_mask for the CPU plugins, every pair of every block evaluated with the call's
// compiled mask_mod (flex::Eval), the outputs written in host memory.
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt_kernels/flex/eval.hpp>

namespace attnrt::kernels::flex {

// Writes args' tensors (validated by check_block_mask_args, host memory) from eval's mask_mod
// (`has_mask_mod` false: every block is full), with `threads` OpenMP threads. Throws
// Error(INVALID_ARGUMENT) when mask_mod read an aux tensor out of its bounds (Eval::check_reads).
void create_block_mask(const Eval& eval, bool has_mask_mod, const attnrt_attention_desc& d,
                       const attnrt_block_mask_args& args, int threads);

}  // namespace attnrt::kernels::flex
