// Host entry points of the flash_attention_3 kernels for a score policy (score_policy.cuh) and a
// head_dim, one translation unit per instantiation and direction (written from fa3_forward.cu.in
// and fa3_backward.cu.in) so the build compiles them in parallel. The caller builds the TMA
// descriptors (tensor_map.hpp) with the box sizes below. Launches are asynchronous on `stream` and return the first
// error.
#pragma once

#include <attnrt_cuda/params.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

namespace attnrt::cuda {
class StandardScores;  // the ABI's score rule (score_policy.cuh)
}

namespace attnrt::cuda::fa3 {

// Rows of the Q box and keys of the K and V boxes of the forward's TMA loads: query rows per CTA
// (a consumer warpgroup per 64) and keys per block. FlashAttention-3's tiles (tile_size.h): at
// head_dim 64 three consumer warpgroups (192 rows), so each K/V block serves more rows and more
// products are in flight per SM; narrower key blocks where shared memory runs out (head_dim 192:
// Q 48 KB, each K and V stage 36 KB at 96 keys, 3-11% faster than 64 keys on the H200,
// bench/results/fa3-hd96-192-deterministic-2026-11-26/; head_dim 256: Q 64 KB, each K and V
// stage 32 KB at 64 keys).
template <int HD>
struct ForwardTiles {
  static constexpr int kBM = HD <= 64 ? 192 : 128;
  static constexpr int kBN = HD <= 128 ? 128 : HD <= 192 ? 96 : 64;
};

// q, k, v as boxes of 64 columns x ForwardTiles' rows (hopper::make_tensor_map), and out as
// boxes of 64 rows where p.o_by_tma says the call has that map (CallLayout::out_map).
struct ForwardMaps {
  CUtensorMap q, k, v, o;
};

// The backward's tiles (fa3_backward.cuh): a CTA's keys (two consumer warpgroups of 64) and the
// queries of one step, FlashAttention-3's hdim 64 and 128 shapes (tile_size.h's bwd tiles).
// Defined for the head dims the backward exists for (BackwardTiles<HD>::kExists).
template <int HD>
struct BackwardTiles {
  static constexpr bool kExists = HD == 64 || HD == 128;
  static constexpr int kBN = 128;
  static constexpr int kBM = HD <= 64 ? 128 : 64;
};

// q and dout as boxes of BackwardTiles::kBM rows, k and v of kBN rows.
struct BackwardMaps {
  CUtensorMap q, k, v, dout;
};

// Forward: writes p.out and, when p.lse is set, p.lse.
template <class Policy, int HD>
cudaError_t run_forward(const AttentionParams& p, const ForwardMaps& maps, bool bf16, cudaStream_t stream);

// Backward (not deterministic: p.dq_accum set, BackwardWorkspace): writes p.dq, p.dk, p.dv and,
// with sinks, p.dsinks.
template <class Policy, int HD>
cudaError_t run_backward(const AttentionParams& p, const BackwardMaps& maps, bool bf16, cudaStream_t stream);

}  // namespace attnrt::cuda::fa3
