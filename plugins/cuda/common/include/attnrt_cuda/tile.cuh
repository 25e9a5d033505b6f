// Shared-memory tiles and the per-sequence geometry the kernels share. Tiles are row-major
// with each row padded by 8 elements (16 bytes): consecutive rows then start in different
// 16-byte bank groups, so ldmatrix's eight row reads and cp.async's writes are free of bank
// conflicts for every head_dim that is a multiple of 8 (an alternative to XOR swizzling that
// also works when head_dim / 8 is not a power of two, e.g. 96 and 192).
#pragma once

#include <attnrt_cuda/params.hpp>
#include <attnrt_cuda/warp_mma.cuh>

#include <cmath>
#include <type_traits>

namespace attnrt::cuda {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

template <int COLS>
struct Padded {
  static constexpr int kStride = COLS + 8;  // elements per smem row
};

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// One sequence of a call: where its rows start and how long it is.
struct Seq {
  int64_t lse_row0 = 0;  // index of (head 0, row 0) in lse / softmax_d
  int32_t q_len = 0, k_len = 0;
  int32_t diag = 0;  // k_len - q_len: bottom-right alignment of the mask
};

__device__ __forceinline__ Seq sequence(const AttentionParams& p, int b) {
  Seq s;
  if (p.cu_seqlens_q) {
    const int32_t q0 = p.cu_seqlens_q[b];
    s.q_len = p.cu_seqlens_q[b + 1] - q0;
    s.k_len = p.cu_seqlens_k ? p.cu_seqlens_k[b + 1] - p.cu_seqlens_k[b] : p.seqlen_k;  // paged: seqused_k
    s.lse_row0 = q0;
  } else {
    s.q_len = p.seqlen_q;
    s.k_len = p.seqlen_k;
    s.lse_row0 = static_cast<int64_t>(b) * p.heads_q * p.seqlen_q;
  }
  if (p.seqused_k) s.k_len = p.seqused_k[b];
  s.diag = s.k_len - s.q_len;
  return s;
}

// Index of (head h, row i of the sequence) in lse / softmax_d.
__device__ __forceinline__ int64_t lse_index(const AttentionParams& p, const Seq& s, int h, int i) {
  const int64_t head_extent = p.cu_seqlens_q ? p.total_q : p.seqlen_q;
  return s.lse_row0 + h * head_extent + i;
}

// Element pointer of (sequence b, token 0, head h) in t. Query-side tensors (q, out, dout, dq)
// start at cu_seqlens_q[b] when varlen, key-side ones (k, v, dk, dv) at cu_seqlens_k[b].
template <class T>
__device__ __forceinline__ T* head_base(const AttentionParams& p, const TensorRef& t, int b, int h, bool query_side) {
  const int64_t row0 =
      p.cu_seqlens_q ? (query_side ? p.cu_seqlens_q[b] : p.cu_seqlens_k[b]) * t.row_stride : b * t.batch_stride;
  return static_cast<T*>(t.data) + row0 + h * t.head_stride;
}

// Copies rows [0, ROWS) x COLS of a global tile (row stride in elements) into a padded smem tile
// with cp.async; rows >= valid_rows are zero-filled. All THREADS threads call it. Each thread
// owns one 16-byte column chunk and steps down the rows by a fixed pass stride, so the loop is
// fully unrolled with one pointer add per chunk (a chunk-index loop with a division per chunk
// cost ~24 instructions per cp.async, a fifth of the forward's issue slots). When THREADS is not a
// multiple of the chunks per row (head_dim 96, 192), the last few threads sit out.
template <class T, int ROWS, int COLS, int THREADS>
__device__ __forceinline__ void load_tile(T* smem, const T* gmem, int64_t row_stride, int valid_rows) {
  constexpr int kChunksPerRow = COLS / 8;
  constexpr int kRowsPerPass = THREADS / kChunksPerRow;
  static_assert(kRowsPerPass > 0, "a pass covers at least one row");
  constexpr int kPasses = ceil_div(ROWS, kRowsPerPass);
  const int tid = static_cast<int>(threadIdx.x);
  if (kRowsPerPass * kChunksPerRow != THREADS && tid >= kRowsPerPass * kChunksPerRow) return;
  const int row = tid / kChunksPerRow, col = (tid % kChunksPerRow) * 8;
  const int64_t pass_stride = kRowsPerPass * row_stride;
  const T* src = gmem + row * row_stride + col;
  T* dst = smem + row * Padded<COLS>::kStride + col;
#pragma unroll
  for (int i = 0; i < kPasses; ++i) {
    const int r = row + i * kRowsPerPass;
    if (ROWS % kRowsPerPass == 0 || r < ROWS) {
      const bool valid = r < valid_rows;
      cp_async_16(dst + i * kRowsPerPass * Padded<COLS>::kStride, valid ? src : gmem, valid);
    }
    src += pass_stride;
  }
}

// x, which the compiler cannot see through: what is computed from it where it is called stays
// there, instead of being hoisted out of a loop as a loop invariant (a kernel at its register
// limit spills hoisted addresses and reloads them in the loop).
__device__ __forceinline__ int opaque(int x) {
  asm volatile("" : "+r"(x));
  return x;
}

// 2^x by the SFU (ex2.approx.ftz: FlashAttention's fast path; 2^-inf = 0).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// An interval [lo, hi) of keys (or queries) that one row (or key) sees: the standard policy's
// element mask (score_policy.cuh). has() after shifted(base) tests base + c with two compares.
struct Span {
  int lo, hi;
  // Whether lo <= base + c < hi, with the interval pre-shifted by base (see shifted()).
  __device__ __forceinline__ bool has(int c) const { return c >= lo && c < hi; }
  __device__ __forceinline__ Span shifted(int base) const { return {lo - base, hi - base}; }
};

// Blocks [lo, hi) of a walk (empty: lo == hi).
struct BlockRange {
  int lo, hi;
};

// Calls fn(std::bool_constant<flag>{}): one branch per tile instead of one per element.
template <class Fn>
__device__ __forceinline__ void with_flag(bool flag, Fn&& fn) {
  if (flag)
    fn(std::true_type{});
  else
    fn(std::false_type{});
}

// Writes accumulator row r (0: row g, 1: row g + 8) of N8 n8 tiles, times `scale`, as pairs of T
// at row + 8 * tile + 2 * t: the C-fragment layout straight to global memory.
template <class T, int N8>
__device__ __forceinline__ void store_accum_row(T* row, const float (&acc)[N8][4], int r, int t, float scale) {
#pragma unroll
  for (int dt = 0; dt < N8; ++dt) {
    *reinterpret_cast<uint32_t*>(row + dt * 8 + 2 * t) = pack2<T>(acc[dt][2 * r] * scale, acc[dt][2 * r + 1] * scale);
  }
}

// Max and sum across the four lanes of a quad (the lanes that share an accumulator row).
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

}  // namespace attnrt::cuda
