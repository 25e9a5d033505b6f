// Warp-level products for the backward kernels (m16n8k16 tensor-core tiles; each warp computes
// MT m16 tiles, so every B fragment it loads feeds MT products):
//   gemm_ss:         acc (16 MT x N) += A (16 MT x K) * B (K x N), both operands in shared memory;
//                    A stored as M rows of K, or transposed (K rows of M, e.g. dS^T read as dS),
//                    B stored as N rows of K (e.g. K for S = Q K^T), or as K rows of N (e.g. dO
//                    for dV = P^T dO); ldmatrix / ldmatrix.trans load either way.
//   gemm_accum_smem: acc (16 x N) += P (16 x K, fp32 accumulators rounded to T) * B, B stored as
//                    K rows of N.
// The ratio of fragment loads to products is what bounds these kernels (shared memory serves
// 128 bytes a clock, one ldmatrix.x4 takes four of them): a 16 x N tile loads 1 + N/16 fragments
// per 2 N/8 products, a 32 x N tile 2 + N/16 per 4 N/8.
// Shared-memory tiles use padded row strides (tile.cuh); lane addresses follow warp_mma.cuh's
// fragment layouts.
#pragma once

#include <attnrt_cuda/warp_mma.cuh>

namespace attnrt::cuda {

// Per-lane ldmatrix coordinates of a B operand: rows are n (non-transposed) or k (transposed).
// `plain` is also the lane layout of an A operand stored transposed.
struct BLane {
  int row, col;
  __device__ static BLane plain(int lane) { return {(lane % 8) + (lane / 16) * 8, ((lane / 8) % 2) * 8}; }
  __device__ static BLane trans(int lane) { return {(lane % 8) + ((lane / 8) % 2) * 8, (lane / 16) * 8}; }
};

enum class Layout { kRowMajor, kTransposed };

// `a`: element (m 0, k 0) of the warp's A tile; `b`: element (k 0, n 0) of its B tile; SA, SB:
// their row strides in elements. kA: A stored as M rows of K (kRowMajor) or K rows of M.
// kB: B stored as N rows of K (kRowMajor: the "col" operand of mma) or K rows of N.
template <class T, int MT, int K, int N, Layout kA, Layout kB, int SA, int SB>
__device__ __forceinline__ void gemm_ss(float (&acc)[MT][N / 8][4], const T* a, const T* b, int lane) {
  static_assert(K % 16 == 0 && N % 16 == 0, "k16 steps, n16 fragment pairs");
  const BLane at = BLane::plain(lane);
  const BLane bl = kB == Layout::kRowMajor ? BLane::plain(lane) : BLane::trans(lane);
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    uint32_t af[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if constexpr (kA == Layout::kRowMajor) {
        ldmatrix_x4(af[mt], a + (mt * 16 + lane % 16) * SA + kk * 16 + (lane / 16) * 8);
      } else {
        ldmatrix_x4_trans(af[mt], a + (kk * 16 + at.row) * SA + mt * 16 + at.col);
      }
    }
#pragma unroll
    for (int np = 0; np < N / 16; ++np) {
      uint32_t bf[4];
      if constexpr (kB == Layout::kRowMajor) {
        ldmatrix_x4(bf, b + (np * 16 + bl.row) * SB + kk * 16 + bl.col);
      } else {
        ldmatrix_x4_trans(bf, b + (kk * 16 + bl.row) * SB + np * 16 + bl.col);
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_16816<T>(acc[mt][2 * np], af[mt], bf[0], bf[1]);
        mma_16816<T>(acc[mt][2 * np + 1], af[mt], bf[2], bf[3]);
      }
    }
  }
}

template <class T, int K, int N, int S>
__device__ __forceinline__ void gemm_accum_smem(float (&acc)[N / 8][4], const float (&p)[K / 8][4], const T* b,
                                                BLane bl) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    uint32_t a[4];
    accum_to_a<T>(a, p[2 * kk], p[2 * kk + 1]);
#pragma unroll
    for (int np = 0; np < N / 16; ++np) {
      uint32_t bf[4];
      ldmatrix_x4_trans(bf, b + (kk * 16 + bl.row) * S + np * 16 + bl.col);
      mma_16816<T>(acc[2 * np], a, bf[0], bf[1]);
      mma_16816<T>(acc[2 * np + 1], a, bf[2], bf[3]);
    }
  }
}

// One m16 tile's accumulators as the [1][N/8][4] array gemm_ss takes.
template <int N8>
__device__ __forceinline__ float (&one_tile(float (&acc)[N8][4]))[1][N8][4] {
  return *reinterpret_cast<float(*)[1][N8][4]>(&acc);
}

}  // namespace attnrt::cuda
