// The two warp-level products the backward kernels are made of (16 rows per warp, m16n8k16):
//   gemm_smem_smem:  acc (16 x N) += A (16 x K, shared memory) * B^T, B stored as N rows of K
//   gemm_accum_smem: acc (16 x N) += P (16 x K, fp32 accumulators rounded to T) * B, B stored as
//                    K rows of N (read transposed by ldmatrix.trans)
//   gemm_smemt_smem: acc (16 x N) += A (16 x K) * B, A stored transposed (K rows of 16 columns,
//                    e.g. dS^T written by the warps that own its rows) and B as K rows of N
// Shared-memory tiles use the padded row stride S (tile.cuh). Lane addresses follow
// warp_mma.cuh's fragment layouts.
#pragma once

#include <attnrt_cuda/warp_mma.cuh>

namespace attnrt::cuda {

// Per-lane ldmatrix coordinates of a B operand: rows are n (non-transposed) or k (transposed).
struct BLane {
  int row, col;
  __device__ static BLane plain(int lane) { return {(lane % 8) + (lane / 16) * 8, ((lane / 8) % 2) * 8}; }
  __device__ static BLane trans(int lane) { return {(lane % 8) + ((lane / 8) % 2) * 8, (lane / 16) * 8}; }
};

// `a_lane`: this lane's ldmatrix row of the warp's A tile (row lane % 16, column (lane / 16) * 8).
template <class T, int K, int N, int S>
__device__ __forceinline__ void gemm_smem_smem(float (&acc)[N / 8][4], const T* a_lane, const T* b, BLane bl) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    uint32_t a[4];
    ldmatrix_x4(a, a_lane + kk * 16);
#pragma unroll
    for (int np = 0; np < N / 16; ++np) {
      uint32_t bf[4];
      ldmatrix_x4(bf, b + (np * 16 + bl.row) * S + kk * 16 + bl.col);
      mma_16816<T>(acc[2 * np], a, bf[0], bf[1]);
      mma_16816<T>(acc[2 * np + 1], a, bf[2], bf[3]);
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

// `a`: the warp's A^T tile (its first column); `b`: the first column of the warp's B slice.
template <class T, int K, int N, int SA, int SB>
__device__ __forceinline__ void gemm_smemt_smem(float (&acc)[N / 8][4], const T* a, const T* b, int lane) {
  const BLane al = BLane::plain(lane), bl = BLane::trans(lane);
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    uint32_t af[4];
    ldmatrix_x4_trans(af, a + (kk * 16 + al.row) * SA + al.col);
#pragma unroll
    for (int np = 0; np < N / 16; ++np) {
      uint32_t bf[4];
      ldmatrix_x4_trans(bf, b + (kk * 16 + bl.row) * SB + np * 16 + bl.col);
      mma_16816<T>(acc[2 * np], af, bf[0], bf[1]);
      mma_16816<T>(acc[2 * np + 1], af, bf[2], bf[3]);
    }
  }
}

}  // namespace attnrt::cuda
