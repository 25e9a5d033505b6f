// The one small matrix product the CPU attention kernels need, written so the compiler keeps
// a 6 x 16 accumulator tile in vector registers (12 AVX2 registers) and emits FMAs:
//   C[i][0..n) += sum_k A(i, k) * B[k][0..n)     for i in [0, m)
// A is addressed through strides (sa_i, sa_k) so A and its transpose use the same code; B and C
// are row-major with leading dimensions ldb, ldc; n must be a multiple of kGemmTileN (callers
// pad B and C with zero columns). gemm_overwrite computes C = A B instead.
#pragma once

#include <attnrt_kernels/vec_math.hpp>

#include <cstdint>

namespace attnrt::kernels {

inline constexpr int64_t kGemmTileN = 16;

template <int R, bool kAccumulate>
inline void gemm_tile_rows(float* __restrict c, int64_t ldc, const float* __restrict a, int64_t sa_i, int64_t sa_k,
                           const float* __restrict b, int64_t ldb, int64_t n, int64_t k) {
  for (int64_t j0 = 0; j0 < n; j0 += kGemmTileN) {
    vec8f acc[R][2];
    for (int r = 0; r < R; ++r) {
      acc[r][0] = kAccumulate ? *reinterpret_cast<const vec8f*>(c + r * ldc + j0) : vec8f{};
      acc[r][1] = kAccumulate ? *reinterpret_cast<const vec8f*>(c + r * ldc + j0 + 8) : vec8f{};
    }
    for (int64_t kk = 0; kk < k; ++kk) {
      const vec8f b0 = *reinterpret_cast<const vec8f*>(b + kk * ldb + j0);
      const vec8f b1 = *reinterpret_cast<const vec8f*>(b + kk * ldb + j0 + 8);
      for (int r = 0; r < R; ++r) {
        const float av = a[r * sa_i + kk * sa_k];
        acc[r][0] += av * b0;
        acc[r][1] += av * b1;
      }
    }
    for (int r = 0; r < R; ++r) {
      *reinterpret_cast<vec8f*>(c + r * ldc + j0) = acc[r][0];
      *reinterpret_cast<vec8f*>(c + r * ldc + j0 + 8) = acc[r][1];
    }
  }
}

// kAccumulate false: C = A B (C's old contents are neither read nor kept).
template <bool kAccumulate>
inline void gemm(float* __restrict c, int64_t ldc, const float* __restrict a, int64_t sa_i, int64_t sa_k,
                 const float* __restrict b, int64_t ldb, int64_t m, int64_t n, int64_t k) {
  int64_t i = 0;
  for (; i + 6 <= m; i += 6) gemm_tile_rows<6, kAccumulate>(c + i * ldc, ldc, a + i * sa_i, sa_i, sa_k, b, ldb, n, k);
  switch (m - i) {
    case 5: gemm_tile_rows<5, kAccumulate>(c + i * ldc, ldc, a + i * sa_i, sa_i, sa_k, b, ldb, n, k); break;
    case 4: gemm_tile_rows<4, kAccumulate>(c + i * ldc, ldc, a + i * sa_i, sa_i, sa_k, b, ldb, n, k); break;
    case 3: gemm_tile_rows<3, kAccumulate>(c + i * ldc, ldc, a + i * sa_i, sa_i, sa_k, b, ldb, n, k); break;
    case 2: gemm_tile_rows<2, kAccumulate>(c + i * ldc, ldc, a + i * sa_i, sa_i, sa_k, b, ldb, n, k); break;
    case 1: gemm_tile_rows<1, kAccumulate>(c + i * ldc, ldc, a + i * sa_i, sa_i, sa_k, b, ldb, n, k); break;
    default: break;
  }
}

inline void gemm_accumulate(float* __restrict c, int64_t ldc, const float* __restrict a, int64_t sa_i, int64_t sa_k,
                            const float* __restrict b, int64_t ldb, int64_t m, int64_t n, int64_t k) {
  gemm<true>(c, ldc, a, sa_i, sa_k, b, ldb, m, n, k);
}

inline void gemm_overwrite(float* __restrict c, int64_t ldc, const float* __restrict a, int64_t sa_i, int64_t sa_k,
                           const float* __restrict b, int64_t ldb, int64_t m, int64_t n, int64_t k) {
  gemm<false>(c, ldc, a, sa_i, sa_k, b, ldb, m, n, k);
}

inline int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

}  // namespace attnrt::kernels
