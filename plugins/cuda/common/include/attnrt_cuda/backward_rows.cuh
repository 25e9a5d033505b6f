// The backward's row-wise kernels (one warp per query row: D, the dsinks sum, the dQ conversion)
// and the atomic adds dQ is accumulated with, shared by flash_attention_2's and
// flash_attention_3's backward.
#pragma once

#include <attnrt_cuda/score_policy.cuh>
#include <attnrt_cuda/tile.cuh>

#ifndef __CUDACC_RTC__  // NVRTC (flex_attention's kernels) takes the kernels, not the launchers
#include <cuda_runtime_api.h>
#endif

namespace attnrt::cuda {

// The query row a warp of a row kernel owns: grid (ceil(seqlen_q / 4), heads_q, batch), 4 warps
// per CTA. `valid` is false past the sequence's end.
struct WarpRow {
  int b, h, i, lane;
  Seq seq;
  bool valid;
};

__device__ __forceinline__ WarpRow warp_row(const AttentionParams& p) {
  WarpRow r;
  r.b = blockIdx.z;
  r.h = blockIdx.y;
  r.seq = sequence(p, r.b);
  r.i = blockIdx.x * 4 + threadIdx.x / 32;
  r.lane = threadIdx.x % 32;
  r.valid = r.i < r.seq.q_len;
  return r;
}

// D_i = rowsum(dO_i * O_i): the softmax Jacobian's correction term (FlashAttention-2, Algorithm 2,
// line 4), handed to the score policy too (on_row_d: the sinks' gradient). Where the call
// accumulates dQ, the row's accumulator is zeroed here too (FlashAttention-3's preprocess kernel
// does the same), where a cudaMemsetAsync of the whole accumulator took 40 us of a 2.7 ms hd128
// backward on the H100 (bench/results/fa3-bwd-fixed-2026-11-26/call1). Rows past a sequence's end
// are left as they are: no kernel adds to them or reads them.
template <class T, int HD, class Policy>
__global__ void __launch_bounds__(128) softmax_d_kernel(const AttentionParams p) {
  const WarpRow row = warp_row(p);
  if (!row.valid) return;
  const int b = row.b, h = row.h, i = row.i, lane = row.lane;
  const Seq& seq = row.seq;
  if (p.dq_accum) {
    static_assert(HD % 4 == 0, "the accumulator's rows are zeroed 16 bytes at a time");
    float* acc_row = p.dq_accum + lse_index(p, seq, h, i) * HD;
    for (int c = lane * 4; c < HD; c += 128) *reinterpret_cast<float4*>(acc_row + c) = make_float4(0.f, 0.f, 0.f, 0.f);
  }
  const T* o = head_base<const T>(p, p.out, b, h, true) + int64_t(i) * p.out.row_stride;
  const T* d = head_base<const T>(p, p.dout, b, h, true) + int64_t(i) * p.dout.row_stride;
  float acc = 0.f;
  for (int c = lane * 2; c < HD; c += 64) {
    const float2 x = unpack2<T>(*reinterpret_cast<const uint32_t*>(o + c));
    const float2 y = unpack2<T>(*reinterpret_cast<const uint32_t*>(d + c));
    acc += x.x * y.x + x.y * y.y;
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (lane == 0) {
    const int64_t idx = lse_index(p, seq, h, i);
    p.softmax_d[idx] = acc;
    Policy(p, seq).on_row_d(h, idx, acc);
  }
}

// dsinks[h] = the sum of head h's per-row shares (p.dsink_rows, laid out like lse), one CTA per
// head adding them in a fixed order: the result is the same on every run. (A template only so
// that every translation unit may instantiate it.)
template <int kThreads = 256>
__global__ void __launch_bounds__(kThreads) dsinks_kernel(const AttentionParams p) {
  const int h = blockIdx.x;
  float acc = 0.f;
  if (p.cu_seqlens_q) {  // varlen: [heads_q, total_q], head h's rows are contiguous
    const float* rows = p.dsink_rows + int64_t(h) * p.total_q;
    for (int64_t r = threadIdx.x; r < p.total_q; r += blockDim.x) acc += rows[r];
  } else {  // [batch, heads_q, seqlen_q]
    for (int b = 0; b < p.batch; ++b) {
      const float* rows = p.dsink_rows + (int64_t(b) * p.heads_q + h) * p.seqlen_q;
      for (int r = threadIdx.x; r < p.seqlen_q; r += blockDim.x) acc += rows[r];
    }
  }
  __shared__ float warp_sums[kThreads / 32];
#pragma unroll
  for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
    p.dsinks[h] = total;
  }
}

// Where column pair `pair` (columns 2 pair, 2 pair + 1) of dq_accum row `row` lives when the
// accumulator is swizzled: pairs trade places by row % 8 within each group of 32 pairs. A kernel
// that stages a tile of dQ in shared memory as mma accumulator fragments (rows 16 w + g and
// + 8, pairs 4 n + t) and adds it to dq_accum with one bulk copy writes those fragments without
// bank conflicts in this layout, where plain rows put the 8 rows of a warp's store on one bank.
__device__ __forceinline__ int dq_swizzled_pair(int64_t row, int pair) {
  return pair ^ (4 * static_cast<int>(row % 8));
}

// dq = softmax_scale * dq_accum, rounded to T (one warp per row; the fp32 rows are contiguous,
// their column pairs permuted by dq_swizzled_pair when kSwizzled).
template <class T, int HD, bool kSwizzled>
__global__ void __launch_bounds__(128) dq_convert_kernel(const AttentionParams p) {
  static_assert(!kSwizzled || HD % 64 == 0, "the swizzle permutes whole groups of 32 column pairs");
  const WarpRow row = warp_row(p);
  if (!row.valid) return;
  const int b = row.b, h = row.h, i = row.i, lane = row.lane;
  const Seq& seq = row.seq;
  const int64_t src_row = lse_index(p, seq, h, i);
  const float* src = p.dq_accum + src_row * HD;
  T* dst = head_base<T>(p, p.dq, b, h, true) + int64_t(i) * p.dq.row_stride;
  for (int c = lane * 2; c < HD; c += 64) {
    const int at = kSwizzled ? 2 * dq_swizzled_pair(src_row, c / 2) : c;
    const float2 x = *reinterpret_cast<const float2*>(src + at);
    *reinterpret_cast<uint32_t*>(dst + c) = pack2<T>(x.x * p.softmax_scale, x.y * p.softmax_scale);
  }
}

// Adds (x, y) to two consecutive floats of global memory (8-byte aligned): one vector atomic
// on sm_90, two scalar ones before.
__device__ __forceinline__ void atomic_add2(float* addr, float x, float y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(addr), make_float2(x, y));
#else
  atomicAdd(addr, x);
  atomicAdd(addr + 1, y);
#endif
}

// Adds v to four consecutive floats of global memory (16-byte aligned): one vector reduction on
// sm_90 (PTX red.global.add.v4.f32), four scalar atomics before.
__device__ __forceinline__ void atomic_add4(float* addr, float4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(addr), "f"(v.x), "f"(v.y), "f"(v.z),
               "f"(v.w)
               : "memory");
#else
  atomicAdd(addr, v.x);
  atomicAdd(addr + 1, v.y);
  atomicAdd(addr + 2, v.z);
  atomicAdd(addr + 3, v.w);
#endif
}

#ifndef __CUDACC_RTC__
// What a backward launches before its dK/dV kernel: D (and, through the policy, each row's share
// of dsinks) with the dQ accumulator's rows zeroed when the call accumulates one, and the dsinks sum.
template <class T, int HD, class Policy>
cudaError_t launch_backward_rows(const AttentionParams& p, cudaStream_t stream) {
  if (p.seqlen_q > 0) {
    const dim3 row_grid(ceil_div(p.seqlen_q, 4), p.heads_q, p.batch);  // one warp per query row
    softmax_d_kernel<T, HD, Policy><<<row_grid, 128, 0, stream>>>(p);  // zeroes dq_accum's rows too
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  if (p.dsinks) {  // sinks: every row's share is written above (zero-length calls: all zero)
    dsinks_kernel<<<p.heads_q, 256, 0, stream>>>(p);  // 256: its template's thread count
    return cudaGetLastError();
  }
  return cudaSuccess;
}

// After the dK/dV kernel of a call with a dQ accumulator: dq = softmax_scale * dq_accum.
template <class T, int HD, bool kSwizzled = false>
cudaError_t launch_dq_convert(const AttentionParams& p, cudaStream_t stream) {
  if (p.seqlen_q == 0) return cudaSuccess;
  dq_convert_kernel<T, HD, kSwizzled><<<dim3(ceil_div(p.seqlen_q, 4), p.heads_q, p.batch), 128, 0, stream>>>(p);
  return cudaGetLastError();
}
#endif  // __CUDACC_RTC__

}  // namespace attnrt::cuda
