// Launch configuration of the flash_attention_3 forward, and the macro each instantiation's
// translation unit expands.
#pragma once

#include "fa3_forward.cuh"
#include "fa3_launch.hpp"

#include <attnrt_cuda/hopper/l2_bands.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>

namespace attnrt::cuda::fa3 {

template <class T, int HD, class Policy>
cudaError_t forward(const AttentionParams& p, const ForwardMaps& maps, cudaStream_t stream) {
  using C = ForwardConfig<HD>;
  // Persistent: one CTA per SM (or per tile, when there are fewer), each walking tiles
  // (forward_kernel). Tiles of one length are dealt out in turn, one pair's query blocks after
  // another. Where lengths differ the caller sets p.tile_counter (causal, windows, varlen: +3-7%
  // causal at head_dim 128 and 256 over one CTA per tile) and CTAs take the next free tile, in
  // bands of (sequence, head) pairs whose K and V fit in 16 MiB together, a third of the H100's
  // L2, longest first within a band; without a counter there, one CTA per tile.
  const int64_t tiles = int64_t(ceil_div(p.seqlen_q, C::kBM)) * p.heads_q * p.batch;
  if (tiles > INT32_MAX) return cudaErrorInvalidConfiguration;
  if (tiles == 0) return cudaSuccess;
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  if ((err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) return err;
  const bool uniform = p.window_left < 0 && p.window_right < 0 && !p.cu_seqlens_q && !p.seqused_k;
  const int64_t ctas = uniform || p.tile_counter ? std::min<int64_t>(tiles, sms) : tiles;
  const bool claimed = p.tile_counter && ctas < tiles;
  // Ping-pong on: +2-12% over taking turns freely at every measured shape but one (docs/perf.md).
  auto kernel = claimed ? forward_kernel<T, HD, Policy, true, true> : forward_kernel<T, HD, Policy, true, false>;
  // One CTA per SM: the tiles and their stages take most of the 227 KB; +1 KB to align the base.
  const size_t smem = sizeof(ForwardSmem<T, HD, C::kBM, C::kBN, C::kStages, C::kOwnO>) + 1024;
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (err != cudaSuccess) return err;
  int band = 1;
  if (claimed) {
    band = hopper::forward_band(p, HD, sizeof(T));
    if ((err = cudaMemsetAsync(p.tile_counter, 0, sizeof(int32_t), stream)) != cudaSuccess) return err;
  }
  kernel<<<static_cast<unsigned>(ctas), C::kThreads, smem, stream>>>(p, maps.q, maps.k, maps.v, maps.o,
                                                                     typename Policy::Params{}, band);
  return cudaGetLastError();
}

template <class Policy, int HD>
cudaError_t run_forward(const AttentionParams& p, const ForwardMaps& maps, bool bf16, cudaStream_t stream) {
  static_assert(ForwardTiles<HD>::kBM == ForwardConfig<HD>::kBM && ForwardTiles<HD>::kBN == ForwardConfig<HD>::kBN,
                "the host's TMA boxes are the kernel's tiles");
  return bf16 ? forward<__nv_bfloat16, HD, Policy>(p, maps, stream) : forward<__half, HD, Policy>(p, maps, stream);
}

}  // namespace attnrt::cuda::fa3

// Instantiates run_forward of (Policy, HD) for fp16 and bf16 in the including .cu file.
#define ATTNRT_FA3_INSTANTIATE_FORWARD(Policy, HD)                 \
  template cudaError_t attnrt::cuda::fa3::run_forward<Policy, HD>( \
      const attnrt::cuda::AttentionParams&, const attnrt::cuda::fa3::ForwardMaps&, bool, cudaStream_t);
