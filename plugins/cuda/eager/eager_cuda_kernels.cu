#include "eager_cuda_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

namespace attnrt::cuda::eager {
namespace {

constexpr int kThreads = 256;

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// The final score of (i, j) for head h, or -inf when masked (the ABI's rule).
__device__ __forceinline__ float score(const RowParams& r, int h, int i, int j, float raw) {
  const int diag = r.k_len - r.q_len;
  if ((r.window_right >= 0 && j > i + diag + r.window_right) || (r.window_left >= 0 && j < i + diag - r.window_left)) {
    return -INFINITY;
  }
  float s = raw * r.softmax_scale;
  if (r.softcap > 0) s = r.softcap * tanhf(s / r.softcap);
  if (r.alibi) s -= r.alibi[r.head0 + h] * fabsf(float(i + diag - j));
  return s;
}

__device__ float block_reduce(float x, bool is_max) {
  __shared__ float partial[kThreads / 32];
  for (int off = 16; off > 0; off /= 2) {
    const float y = __shfl_xor_sync(0xffffffffu, x, off);
    x = is_max ? fmaxf(x, y) : x + y;
  }
  __syncthreads();  // partial may still be read by the previous reduction
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = x;
  __syncthreads();
  x = partial[0];
  for (int w = 1; w < kThreads / 32; ++w) x = is_max ? fmaxf(x, partial[w]) : x + partial[w];
  return x;
}

// The row's lse from its scores (and sink), as the forward defines it.
__device__ float row_lse(const RowParams& r, int h, int i, const float* srow) {
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < r.k_len; j += kThreads) mx = fmaxf(mx, score(r, h, i, j, srow[j]));
  const float sink = r.sinks ? r.sinks[r.head0 + h] : -INFINITY;
  mx = fmaxf(block_reduce(mx, true), sink);
  if (mx == -INFINITY) return -INFINITY;
  float sum = 0.f;
  for (int j = threadIdx.x; j < r.k_len; j += kThreads) sum += expf(score(r, h, i, j, srow[j]) - mx);
  sum = block_reduce(sum, false) + (r.sinks ? expf(sink - mx) : 0.f);
  return mx + logf(sum);
}

template <class T>
__global__ void __launch_bounds__(kThreads) softmax_forward_kernel(const RowParams r, const float* s, T* p) {
  const int h = blockIdx.x / r.q_len, i = blockIdx.x % r.q_len;
  const float* srow = s + int64_t(blockIdx.x) * r.k_len;
  T* prow = p + int64_t(blockIdx.x) * r.k_len;
  const float lse = row_lse(r, h, i, srow);
  for (int j = threadIdx.x; j < r.k_len; j += kThreads) {
    prow[j] = from_float<T>(lse == -INFINITY ? 0.f : expf(score(r, h, i, j, srow[j]) - lse));
  }
  if (r.lse && threadIdx.x == 0) r.lse[(r.head0 + h) * r.lse_head_stride + i] = lse;
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    softmax_backward_kernel(const RowParams r, const float* s, const float* dp, T* ds, float* dsink_rows) {
  const int h = blockIdx.x / r.q_len, i = blockIdx.x % r.q_len;
  const int64_t off = int64_t(blockIdx.x) * r.k_len;
  const float lse = r.lse[(r.head0 + h) * r.lse_head_stride + i];
  float d = 0.f;
  if (lse != -INFINITY) {
    for (int j = threadIdx.x; j < r.k_len; j += kThreads) d += expf(score(r, h, i, j, s[off + j]) - lse) * dp[off + j];
  }
  d = block_reduce(d, false);
  for (int j = threadIdx.x; j < r.k_len; j += kThreads) {
    float g = 0.f;
    const float sc = score(r, h, i, j, s[off + j]);
    if (lse != -INFINITY && sc != -INFINITY) {
      g = expf(sc - lse) * (dp[off + j] - d) * r.softmax_scale;
      if (r.softcap > 0) {
        const float t = tanhf(s[off + j] * r.softmax_scale / r.softcap);
        g *= 1.f - t * t;
      }
    }
    ds[off + j] = from_float<T>(g);
  }
  if (dsink_rows && threadIdx.x == 0) {
    dsink_rows[blockIdx.x] = lse == -INFINITY ? 0.f : -expf(r.sinks[r.head0 + h] - lse) * d;
  }
}

__global__ void reduce_rows_kernel(const float* rows_in, int32_t rows, float* out, bool accumulate) {
  // One thread per head: a fixed summation order, so repeats are bit-identical.
  if (threadIdx.x != 0) return;
  float sum = accumulate ? out[blockIdx.x] : 0.f;
  for (int i = 0; i < rows; ++i) sum += rows_in[int64_t(blockIdx.x) * rows + i];
  out[blockIdx.x] = sum;
}

template <class T>
__global__ void convert_rows_kernel(const float* src, T* dst, int32_t heads, int32_t dim, int64_t row_stride,
                                    int64_t head_stride) {
  const int r = blockIdx.x;
  for (int c = threadIdx.x; c < heads * dim; c += blockDim.x) {
    const int h = c / dim, e = c % dim;
    dst[r * row_stride + h * head_stride + e] = from_float<T>(src ? src[int64_t(r) * heads * dim + c] : 0.f);
  }
}

template <class T>
__global__ void gather_pages_kernel(const T* pages, const int32_t* table_row, T* dst, int32_t page_size, int32_t heads,
                                    int32_t dim, int64_t page_stride, int64_t row_stride, int64_t head_stride) {
  const int j = blockIdx.x;
  const T* src = pages + int64_t(table_row[j / page_size]) * page_stride + int64_t(j % page_size) * row_stride;
  for (int c = threadIdx.x; c < heads * dim; c += blockDim.x) {
    const int h = c / dim, e = c % dim;
    dst[int64_t(j) * heads * dim + c] = src[h * head_stride + e];
  }
}

template <class Fn>
cudaError_t by_dtype(Dtype dtype, Fn&& fn) {
  switch (dtype) {
    case Dtype::kF32: fn(float{}); break;
    case Dtype::kF16: fn(__half{}); break;
    case Dtype::kBF16: fn(__nv_bfloat16{}); break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t softmax_forward(const RowParams& r, const float* s, void* p, Dtype dtype, cudaStream_t stream) {
  if (r.heads * r.q_len == 0) return cudaSuccess;
  return by_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    softmax_forward_kernel<T><<<r.heads * r.q_len, kThreads, 0, stream>>>(r, s, static_cast<T*>(p));
  });
}

cudaError_t softmax_backward(const RowParams& r, const float* s, const float* dp, void* ds, Dtype dtype,
                             float* dsink_rows, cudaStream_t stream) {
  if (r.heads * r.q_len == 0) return cudaSuccess;
  return by_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    softmax_backward_kernel<T><<<r.heads * r.q_len, kThreads, 0, stream>>>(r, s, dp, static_cast<T*>(ds), dsink_rows);
  });
}

cudaError_t reduce_rows(const float* dsink_rows, int32_t heads, int32_t rows, float* dsinks, bool accumulate,
                        cudaStream_t stream) {
  if (heads == 0) return cudaSuccess;
  reduce_rows_kernel<<<heads, 32, 0, stream>>>(dsink_rows, rows, dsinks, accumulate);
  return cudaGetLastError();
}

cudaError_t convert_rows(const float* src, void* dst, Dtype dtype, int32_t rows, int32_t heads, int32_t dim,
                         int64_t dst_row_stride, int64_t dst_head_stride, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  return by_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    convert_rows_kernel<T>
        <<<rows, 256, 0, stream>>>(src, static_cast<T*>(dst), heads, dim, dst_row_stride, dst_head_stride);
  });
}

cudaError_t gather_pages(const void* pages, const int32_t* table_row, void* dst, Dtype dtype, int32_t k_len,
                         int32_t page_size, int32_t heads, int32_t dim, int64_t page_stride, int64_t row_stride,
                         int64_t head_stride, cudaStream_t stream) {
  if (k_len == 0) return cudaSuccess;
  return by_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    gather_pages_kernel<T><<<k_len, 256, 0, stream>>>(static_cast<const T*>(pages), table_row, static_cast<T*>(dst),
                                                      page_size, heads, dim, page_stride, row_stride, head_stride);
  });
}

}  // namespace attnrt::cuda::eager
