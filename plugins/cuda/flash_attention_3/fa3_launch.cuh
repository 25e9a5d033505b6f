// Launch configuration of the flash_attention_3 forward, and the macro each instantiation's
// translation unit expands.
#pragma once

#include "fa3_forward.cuh"
#include "fa3_launch.hpp"

namespace attnrt::cuda::fa3 {

template <class T, int HD, class Policy>
cudaError_t forward(const AttentionParams& p, const ForwardMaps& maps, cudaStream_t stream) {
  using C = ForwardConfig<HD>;
  // Ping-pong on: +2-12% over taking turns freely at every measured shape but one (docs/perf.md).
  auto kernel = forward_kernel<T, HD, Policy, true>;
  // One CTA per SM: the tiles and their stages take most of the 227 KB; +1 KB to align the base.
  const size_t smem = sizeof(ForwardSmem<T, HD, C::kBM, C::kBN, C::kStages>) + 1024;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (err != cudaSuccess) return err;
  const dim3 grid(ceil_div(p.seqlen_q, C::kBM), p.heads_q, p.batch);
  kernel<<<grid, C::kThreads, smem, stream>>>(p, maps.q, maps.k, maps.v);
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
