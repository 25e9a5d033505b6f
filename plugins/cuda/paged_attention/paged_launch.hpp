// Host entry points of the paged_attention kernels. The attention kernel is a template on the
// score policy (StandardScores or SinkScores) and head_dim, one translation unit per
// instantiation (paged_instantiation.cu.in) so the build compiles them in parallel; the split-KV
// combine and the KV-cache append are in paged_common.cu. Every launch is asynchronous on
// `stream` and returns the first launch error (the plugin turns it into ATTNRT_ERROR_DEVICE).
#pragma once

#include "paged_params.hpp"

#include <cuda_runtime_api.h>

namespace attnrt::cuda::paged {

// Query rows (token, query head of one KV head) per thread block and keys per tile: the kernel's
// geometry, which the host needs for the grid and the split heuristic.
constexpr int kRows = 16;
constexpr int kKeys = 32;
constexpr int kThreads = 128;

// Attention over the paged cache: with p.num_splits == 1 writes out (and lse when set); else
// each split's partial output and LSE into p.partial_out / p.partial_lse (run_combine merges).
template <class Policy, int HD>
cudaError_t run_attention(const PagedParams& p, bool bf16, cudaStream_t stream);

// Thread blocks one run_attention<.., HD> keeps resident per SM (for the split heuristic).
template <class Policy, int HD>
int blocks_per_sm(bool bf16);

// Merges p.num_splits partial results into out and lse (FlashDecoding's reduction).
cudaError_t run_combine(const PagedParams& p, bool bf16, cudaStream_t stream);

// Writes new tokens into the paged cache through a slot mapping.
cudaError_t run_append(const AppendParams& p, bool bf16, cudaStream_t stream);

}  // namespace attnrt::cuda::paged
