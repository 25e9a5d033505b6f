// Launch sequence of the flash_attention_3 backward, and the macro each instantiation's
// translation unit expands: D (and each row's share of dsinks), the zeroed dQ accumulator, the
// dsinks sum, the dK/dV/dQ kernel (fa3_backward.cuh), then dQ scaled and rounded into dq.
#pragma once

#include "fa3_backward.cuh"
#include "fa3_launch.hpp"

#include <attnrt_cuda/backward_rows.cuh>
#include <attnrt_cuda/hopper/l2_bands.hpp>

#include <climits>
#include <cstdint>

namespace attnrt::cuda::fa3 {

template <class T, int HD, class Policy>
cudaError_t backward(const AttentionParams& p, const BackwardMaps& maps, cudaStream_t stream) {
  using C = BackwardConfig<HD>;
  if (p.dq_accum == nullptr) return cudaErrorInvalidValue;  // deterministic calls too (fa3_calls.hpp)
  cudaError_t err = launch_backward_rows<T, HD, Policy>(p, stream);
  if (err != cudaSuccess) return err;
  if (p.dq_semaphore) {  // deterministic: every query block's count of dQ additions starts at 0
    const size_t blocks = size_t(p.batch) * p.heads_q * ceil_div(p.seqlen_q, C::kBM);
    if ((err = cudaMemsetAsync(p.dq_semaphore, 0, blocks * sizeof(int32_t), stream)) != cudaSuccess) return err;
  }
  if (p.seqlen_k > 0) {
    auto kernel = backward_kernel<T, HD, Policy>;
    const size_t smem = sizeof(BackwardSmem<T, HD, C::kBM, C::kBN, C::kStages>) + 1024;  // +1 KB: alignment
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (err != cudaSuccess) return err;
    const int band = hopper::backward_band(p, HD, sizeof(T));  // backward_tile's bands
    const int64_t ctas = int64_t(ceil_div(p.seqlen_k, C::kBN)) * p.heads_kv * p.batch;
    if (ctas > INT32_MAX) return cudaErrorInvalidConfiguration;
    kernel<<<static_cast<unsigned>(ctas), C::kThreads, smem, stream>>>(p, maps.q, maps.k, maps.v, maps.dout,
                                                                       typename Policy::Params{}, band);
    if ((err = cudaGetLastError()) != cudaSuccess) return err;
  }
  return launch_dq_convert<T, HD, /*kSwizzled=*/true>(p, stream);
}

template <class Policy, int HD>
cudaError_t run_backward(const AttentionParams& p, const BackwardMaps& maps, bool bf16, cudaStream_t stream) {
  if constexpr (!BackwardTiles<HD>::kExists) {
    return cudaErrorNotSupported;  // the host side calls only head dims with tiles (fa3_calls.hpp)
  } else {
    return bf16 ? backward<__nv_bfloat16, HD, Policy>(p, maps, stream) : backward<__half, HD, Policy>(p, maps, stream);
  }
}

}  // namespace attnrt::cuda::fa3

// Instantiates run_backward of (Policy, HD) for fp16 and bf16 in the including .cu file.
#define ATTNRT_FA3_INSTANTIATE_BACKWARD(Policy, HD)                 \
  template cudaError_t attnrt::cuda::fa3::run_backward<Policy, HD>( \
      const attnrt::cuda::AttentionParams&, const attnrt::cuda::fa3::BackwardMaps&, bool, cudaStream_t);
