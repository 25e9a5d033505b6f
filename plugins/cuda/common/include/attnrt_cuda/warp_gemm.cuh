// Warp-level products (m16n8k16 tensor-core tiles; each warp computes MT m16 tiles, so every B
// fragment it loads feeds MT products):
//   gemm_xs:         acc (16 MT x N) += A * B (K x N), B in shared memory, A from any source (shared
//                    memory, registers, accumulators of an earlier product); pipelined loads.
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

#include <type_traits>

namespace attnrt::cuda {

// Per-lane ldmatrix coordinates of a B operand: rows are n (non-transposed) or k (transposed).
// `plain` is also the lane layout of an A operand stored transposed.
struct BLane {
  int row, col;
  __device__ static BLane plain(int lane) { return {(lane % 8) + (lane / 16) * 8, ((lane / 8) % 2) * 8}; }
  __device__ static BLane trans(int lane) { return {(lane % 8) + ((lane / 8) % 2) * 8, (lane / 16) * 8}; }
};

enum class Layout { kRowMajor, kTransposed };

// The A operand of a warp tile, one k16 slice at a time: fragments of MT m16 tiles read from
// shared memory by ldmatrix. `a`: element (m 0, k 0) of the warp's tile; SA: its row stride;
// kA: stored as M rows of K (kRowMajor) or as K rows of M (kTransposed, e.g. dS^T read as dS).
template <class T, int MT, Layout kA, int SA>
struct SmemA {
  const T* a;
  int lane;
  __device__ __forceinline__ void operator()(int kk, uint32_t (&f)[MT][4]) const {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if constexpr (kA == Layout::kRowMajor) {
        ldmatrix_x4(f[mt], a + (mt * 16 + lane % 16) * SA + kk * 16 + (lane / 16) * 8);
      } else {
        const BLane at = BLane::plain(lane);
        ldmatrix_x4_trans(f[mt], a + (kk * 16 + at.row) * SA + mt * 16 + at.col);
      }
    }
  }
};

// Where element (row, col) of a shared-memory B tile lies, col a multiple of 8 (one 16-byte
// chunk): PaddedRows, rows of SB elements (tile.cuh's padding keeps ldmatrix conflict-free);
// SwizzledRows, unpadded rows of W elements whose 16-byte chunks are XOR-swizzled by the row
// (chunk c of row r at c ^ (r % 8) within its 128-byte group: CUTLASS's Swizzle<3, 3, 3>), so
// rows start 128-byte aligned, as whole-row cp.async copies want, and ldmatrix's 8 rows of one
// chunk still fall in 8 different bank groups.
template <int SB>
struct PaddedRows {
  __device__ __forceinline__ static int offset(int row, int col) { return row * SB + col; }
};
template <int W>
struct SwizzledRows {
  static_assert(W % 64 == 0, "rows of whole 128-byte groups of 16-bit elements");
  __device__ __forceinline__ static int offset(int row, int col) {
    return row * W + (col & ~63) + ((((col >> 3) ^ row) & 7) << 3);
  }
};

// acc (16 MT x N) += A (16 MT x K) * B (K x N) with B in shared memory and A from `load_a`
// (load_a(kk, frags) fills the k16 slice kk: SmemA, or fragments held in registers). `b`: element
// (k 0, n 0) of the B tile, SB its row stride (or Rows its layout); kB: B stored as N rows of K
// (kRowMajor: the "col" operand of mma) or as K rows of N.
// Software-pipelined one fragment ahead: the next B fragment (and at the start of each k16 slice
// the next slice's A fragments) is loaded before the current products, so an ldmatrix's latency
// hides behind 2 MT products instead of stalling the next ones. ldmatrix is volatile asm (it
// reads shared memory written across barriers), so the compiler keeps the loads in this order
// and the prefetch has to be written out; without it ptxas reused one fragment register and
// each product waited on its load (ncu: short-scoreboard stalls on every HMMA, docs/perf.md).
// `after_step(i)` runs after step i of K/16 x N/16 (each 2 MT products): a caller spreads
// other work, e.g. global atomics that would fill the memory queue if issued back to back,
// over the products.
struct NoStep {
  __device__ void operator()(int) const {}
};

template <class T, int MT, int K, int N, Layout kB, int SB, class LoadA, class AfterStep = NoStep,
          class Rows = PaddedRows<SB>>
__device__ __forceinline__ void gemm_xs(float (&acc)[MT][N / 8][4], const LoadA& load_a, const T* b, int lane,
                                        const AfterStep& after_step = {}) {
  static_assert(K % 16 == 0 && N % 16 == 0, "k16 steps, n16 fragment pairs");
  constexpr int kSlices = K / 16, kPairs = N / 16, kSteps = kSlices * kPairs;
  const BLane bl = kB == Layout::kRowMajor ? BLane::plain(lane) : BLane::trans(lane);
  auto load_b = [&](uint32_t(&f)[4], int step) {
    const int kk = step / kPairs, np = step % kPairs;
    // (Padded rows keep the pointer arithmetic they always had: the same PTX for every kernel
    // written before SwizzledRows.)
    constexpr bool kPadded = std::is_same_v<Rows, PaddedRows<SB>>;
    if constexpr (kB == Layout::kRowMajor && kPadded) {
      ldmatrix_x4(f, b + (np * 16 + bl.row) * SB + kk * 16 + bl.col);
    } else if constexpr (kB == Layout::kRowMajor) {
      ldmatrix_x4(f, b + Rows::offset(np * 16 + bl.row, kk * 16 + bl.col));
    } else if constexpr (kPadded) {
      ldmatrix_x4_trans(f, b + (kk * 16 + bl.row) * SB + np * 16 + bl.col);
    } else {
      ldmatrix_x4_trans(f, b + Rows::offset(kk * 16 + bl.row, np * 16 + bl.col));
    }
  };
  uint32_t af[2][MT][4], bf[2][4];
  load_a(0, af[0]);
  load_b(bf[0], 0);
  // Two nested loops, not one over K/16 x N/16 steps: a single 64-step loop (head_dim 256) was
  // left rolled, and the accumulators it indexes went to local memory.
#pragma unroll
  for (int kk = 0; kk < kSlices; ++kk) {
#pragma unroll
    for (int np = 0; np < kPairs; ++np) {
      const int step = kk * kPairs + np;
      if (np == 0 && kk + 1 < kSlices) load_a(kk + 1, af[(kk + 1) % 2]);
      if (step + 1 < kSteps) load_b(bf[(step + 1) % 2], step + 1);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_16816<T>(acc[mt][2 * np], af[kk % 2][mt], bf[step % 2][0], bf[step % 2][1]);
        mma_16816<T>(acc[mt][2 * np + 1], af[kk % 2][mt], bf[step % 2][2], bf[step % 2][3]);
      }
      after_step(step);
    }
  }
}

// Both operands in shared memory (see SmemA and gemm_xs).
template <class T, int MT, int K, int N, Layout kA, Layout kB, int SA, int SB, class AfterStep = NoStep>
__device__ __forceinline__ void gemm_ss(float (&acc)[MT][N / 8][4], const T* a, const T* b, int lane,
                                        const AfterStep& after_step = {}) {
  gemm_xs<T, MT, K, N, kB, SB>(acc, SmemA<T, MT, kA, SA>{a, lane}, b, lane, after_step);
}

// acc (16 x N) += P (16 x K, fp32 accumulators rounded to T) * B, B stored as K rows of N.
template <class T, int K, int N, int S>
__device__ __forceinline__ void gemm_accum_smem(float (&acc)[N / 8][4], const float (&p)[K / 8][4], const T* b,
                                                int lane) {
  auto load_a = [&](int kk, uint32_t(&f)[1][4]) { accum_to_a<T>(f[0], p[2 * kk], p[2 * kk + 1]); };
  gemm_xs<T, 1, K, N, Layout::kTransposed, S>(*reinterpret_cast<float(*)[1][N / 8][4]>(&acc), load_a, b, lane);
}

// One m16 tile's accumulators as the [1][N/8][4] array gemm_ss takes.
template <int N8>
__device__ __forceinline__ float (&one_tile(float (&acc)[N8][4]))[1][N8][4] {
  return *reinterpret_cast<float(*)[1][N8][4]>(&acc);
}

}  // namespace attnrt::cuda
