// Host entry points of the paged_attention kernels. The attention kernel is a template on the
// score policy (StandardScores or SinkScores) and head_dim, one translation unit per
// instantiation (paged_instantiation.cu.in) so the build compiles them in parallel; the split-KV
// combine and the KV-cache append are in paged_common.cu. Every launch is asynchronous on
// `stream` and returns the first launch error (the plugin turns it into ATTNRT_ERROR_DEVICE).
#pragma once

#include "paged_params.hpp"

#include <cuda_runtime_api.h>

namespace attnrt::cuda::paged {

// The kernel's geometry, which the host needs for the grid and the split heuristic: kRows query
// rows (token, query head of one KV head) per thread block, one m16 tile of the tensor cores;
// key tiles of kKeys keys, of which each of the kWarps warps takes kWarpKeys (one k16 step of
// P V); kStages tiles in shared memory (a cp.async ring: kStages - 1 tiles in flight while one
// is computed).
constexpr int kRows = 16;
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kWarpKeys = 16;
constexpr int kKeys = kWarps * kWarpKeys;
// 3 stages (2 blocks per SM at head_dim 128) rather than 2 (3 blocks per SM): in one H100 call
// the ring of 3 streamed 4-6% more on 64 x 2k decode, 1-4% more on 1 x 64k, the same on 16 x 8k
// and 1-3% less on 256 x 1k (bench/results/paged-decode-2026-11-23/: decode_bench.csv, 2 stages,
// vs decode_bench_stages3.csv). Deeper rings at one block per SM (6 stages: 0.70-0.78x) and
// 8 warps per block (-1%) were slower too (bench/results/paged-decode-2026-11-24/experiments/).
constexpr int kStages = 3;
constexpr int kMaxSplits = 128;   // the most split-KV shares the combine kernel merges
constexpr int kMaxHeadDim = 256;  // the widest value row the combine kernel merges

// Attention over the paged cache: with p.num_splits == 1 writes out (and lse when set); else
// each split's partial output and LSE into p.partial_out / p.partial_lse (run_combine merges).
// p.groups 2 (a block of two kWarps groups, each half of its split's keys) where
// blocks_per_sm(bf16, 2) is not 0.
template <class Policy, int HD>
cudaError_t run_attention(const PagedParams& p, bool bf16, cudaStream_t stream);

// Thread blocks of `groups` groups one run_attention<.., HD> keeps resident per SM (for the split
// heuristic): 0 where two groups do not fit a block (head_dim 256, or the device's shared memory).
template <class Policy, int HD>
int blocks_per_sm(bool bf16, int groups);

// Merges p.num_splits partial results into out and lse (FlashDecoding's reduction), right
// after run_attention on the same stream; `dependent_launch` (sm_90 and later only) lets it
// start as a programmatic dependent of that launch.
cudaError_t run_combine(const PagedParams& p, bool bf16, bool dependent_launch, cudaStream_t stream);

// Writes new tokens into the paged cache through a slot mapping.
cudaError_t run_append(const AppendParams& p, bool bf16, cudaStream_t stream);

}  // namespace attnrt::cuda::paged
