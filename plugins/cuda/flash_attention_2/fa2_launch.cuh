// Launch configurations, one per head_dim. The forward, the split dK/dV kernel and the dQ pass run
// 4 warps with at most 255 registers per thread, so two CTAs share an SM and one's barriers and
// loads overlap the other's tensor-core work (one forward CTA of 8 warps measured 0.3-0.45x of
// FlashAttention-2; docs/perf.md). dkdv_kernel runs 8 warps: its warps share P and dS through
// shared memory, which is what halves their operand loads.
#pragma once

#include "fa2_backward.cuh"
#include "fa2_forward.cuh"
#include "fa2_launch.hpp"

#include <atomic>
#include <cstdlib>
#include <string_view>

namespace attnrt::cuda::fa2 {

template <int HD>
struct Config {
  // Forward: 4 warps of MT m16 tiles each (MT = 2 up to head_dim 128: 128 rows, K/V fragments
  // shared by two tiles; MT = 1 beyond, where two tiles' accumulators would not fit).
  static constexpr int kFwdMT = HD <= 128 ? 2 : 1;
  static constexpr int kFwdBM = 64 * kFwdMT;
  // Keys per block: 128 at head_dim 64 (FlashAttention-2's 128 x 128 tile there: half the
  // barriers and row reductions per key of BN 64, +6-10% at seqlen 512-2k), else 64 (head_dim 32
  // at 128 spills; above 64 the accumulators leave no room).
  static constexpr int kFwdBN = HD == 64 ? 128 : 64;
  // dkdv_split_kernel, above head_dim 128 and on GPUs without sm_90's shared memory: dV and dK
  // in two passes, keys per CTA (16 per warp), queries per step.
  static constexpr int kSplitBN = 64, kSplitBM = HD <= 128 ? 64 : 32;
  static constexpr int kDqBM = 64, kDqBN = HD <= 128 ? 64 : 32;
};

#define ATTNRT_CUDA_TRY(expr)             \
  do {                                    \
    const cudaError_t err_ = (expr);      \
    if (err_ != cudaSuccess) return err_; \
  } while (0)

// The opt-in shared memory of `Kernel`, set once per device: the attribute belongs to the function
// in the device's context and never changes here, and cudaFuncSetAttribute is a driver call on
// every launch otherwise (issue 19: the launch path's host time). Kernel is a template argument so
// that each kernel has its own record.
template <auto Kernel>
cudaError_t set_smem(size_t bytes) {
  static std::atomic<uint64_t> done{0};  // bit d: set on device d
  int device = 0;
  ATTNRT_CUDA_TRY(cudaGetDevice(&device));
  const uint64_t bit = device >= 0 && device < 64 ? uint64_t{1} << device : 0;
  if (bit && (done.load(std::memory_order_acquire) & bit)) return cudaSuccess;
  ATTNRT_CUDA_TRY(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  done.fetch_or(bit, std::memory_order_release);
  return cudaSuccess;
}

template <class T, int HD, class Policy>
cudaError_t forward(const AttentionParams& p, cudaStream_t stream) {
  using C = Config<HD>;
  using Tile = ForwardTile<HD, C::kFwdBM, C::kFwdBN, C::kFwdMT>;
  constexpr auto kernel = forward_kernel<T, HD, C::kFwdBM, C::kFwdBN, C::kFwdMT, Policy>;
  ATTNRT_CUDA_TRY(set_smem<kernel>(Tile::kSmemBytes));
  const dim3 grid(ceil_div(p.seqlen_q, C::kFwdBM), p.heads_q, p.batch);
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, stream>>>(p, typename Policy::Params{});
  return cudaGetLastError();
}

template <class T, int HD, class Policy, bool kDq>
cudaError_t launch_dkdv(const AttentionParams& p, cudaStream_t stream) {
  using Tile = DkDvTile<HD, kDq>;
  constexpr auto kernel = dkdv_kernel<T, HD, kDq, Policy>;
  ATTNRT_CUDA_TRY(set_smem<kernel>(Tile::kSmemBytes));
  const dim3 grid(ceil_div(p.seqlen_k, Tile::kBN), p.heads_kv, p.batch);
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, stream>>>(p, typename Policy::Params{});
  return cudaGetLastError();
}

template <class T, int HD, class Policy, DkDv kMode, bool kDq = false>
cudaError_t launch_dkdv_split(const AttentionParams& p, cudaStream_t stream) {
  using C = Config<HD>;
  using Tile = SplitDkDvTile<HD, C::kSplitBN, C::kSplitBM, kDq>;
  constexpr auto kernel = dkdv_split_kernel<T, HD, C::kSplitBN, C::kSplitBM, kMode, kDq, Policy>;
  ATTNRT_CUDA_TRY(set_smem<kernel>(Tile::kSmemBytes));
  const dim3 grid(ceil_div(p.seqlen_k, C::kSplitBN), p.heads_kv, p.batch);
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, stream>>>(p, typename Policy::Params{});
  return cudaGetLastError();
}

// Whether the current device is sm_90 or newer with at least `smem_bytes` of opt-in shared memory
// per CTA, asked once per device and remembered (backward calls are a hot path).
inline bool device_has_sm90_smem(size_t smem_bytes) {
  constexpr int kDevices = 64;
  static std::atomic<int> smem_optin[kDevices];  // 0: not asked yet; -1: not sm_90; else bytes
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0) return false;
  int known = device < kDevices ? smem_optin[device].load(std::memory_order_relaxed) : 0;
  if (known == 0) {
    int major = 0, optin = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
      return false;
    }
    known = major >= 9 && optin > 0 ? optin : -1;
    if (device < kDevices) smem_optin[device].store(known, std::memory_order_relaxed);
  }
  return known > 0 && size_t(known) >= smem_bytes;
}

// Whether dkdv_kernel (head_dim <= 128) runs: it needs sm_90's shared memory.
// ATTNRT_FA2_BACKWARD=split forces the split kernel, so that the path other GPUs take is tested
// on an H100 too (read per call, so a test can switch it).
inline bool wide_dkdv_runs(size_t smem_bytes) {
  const char* force = std::getenv("ATTNRT_FA2_BACKWARD");
  if (force && std::string_view(force) == "split") return false;
  return device_has_sm90_smem(smem_bytes);
}

template <class T, int HD, class Policy>
cudaError_t launch_dkdv_any(const AttentionParams& p, cudaStream_t stream) {
  const bool fused_dq = p.dq_accum != nullptr;
  if constexpr (HD <= 128) {
    if (wide_dkdv_runs(DkDvTile<HD, true>::kSmemBytes)) {
      return fused_dq ? launch_dkdv<T, HD, Policy, true>(p, stream) : launch_dkdv<T, HD, Policy, false>(p, stream);
    }
  }
  ATTNRT_CUDA_TRY((launch_dkdv_split<T, HD, Policy, DkDv::kDvOnly>(p, stream)));
  return fused_dq ? launch_dkdv_split<T, HD, Policy, DkDv::kDkOnly, true>(p, stream)
                  : launch_dkdv_split<T, HD, Policy, DkDv::kDkOnly>(p, stream);
}

template <class T, int HD, class Policy>
cudaError_t backward(const AttentionParams& p, cudaStream_t stream) {
  using C = Config<HD>;
  ATTNRT_CUDA_TRY((launch_backward_rows<T, HD, Policy>(p, stream)));
  if (p.seqlen_k > 0) ATTNRT_CUDA_TRY((launch_dkdv_any<T, HD, Policy>(p, stream)));
  if (p.seqlen_q == 0) return cudaSuccess;
  if (p.dq_accum) return launch_dq_convert<T, HD>(p, stream);
  using Tile = DqTile<HD, C::kDqBM, C::kDqBN>;
  constexpr auto kernel = dq_kernel<T, HD, C::kDqBM, C::kDqBN, Policy>;
  ATTNRT_CUDA_TRY(set_smem<kernel>(Tile::kSmemBytes));
  kernel<<<dim3(ceil_div(p.seqlen_q, C::kDqBM), p.heads_q, p.batch), Tile::kThreads, Tile::kSmemBytes, stream>>>(p);
  return cudaGetLastError();
}

template <class Policy, int HD>
cudaError_t run_forward(const AttentionParams& p, bool bf16, cudaStream_t stream) {
  return bf16 ? forward<__nv_bfloat16, HD, Policy>(p, stream) : forward<__half, HD, Policy>(p, stream);
}

template <class Policy, int HD>
cudaError_t run_backward(const AttentionParams& p, bool bf16, cudaStream_t stream) {
  return bf16 ? backward<__nv_bfloat16, HD, Policy>(p, stream) : backward<__half, HD, Policy>(p, stream);
}

}  // namespace attnrt::cuda::fa2

// Instantiates run_forward / run_backward of (Policy, HD) for fp16 and bf16 in the including .cu
// file: one translation unit per instantiation, so the build compiles them in parallel.
#define ATTNRT_FA2_INSTANTIATE(Policy, HD)                                                                     \
  template cudaError_t attnrt::cuda::fa2::run_forward<Policy, HD>(const attnrt::cuda::AttentionParams&, bool,  \
                                                                  cudaStream_t);                               \
  template cudaError_t attnrt::cuda::fa2::run_backward<Policy, HD>(const attnrt::cuda::AttentionParams&, bool, \
                                                                   cudaStream_t);
