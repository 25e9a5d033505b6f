// Row kernels of the CUDA eager plugin: the softmax between its two cuBLAS products, its
// backward, and the small copies around them. Rows are (head, query) pairs of one sequence;
// score matrices are [heads, q_len, k_len] row-major. Launches are asynchronous on `stream` and
// return the launch's error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace attnrt::cuda::eager {

enum class Dtype { kF32, kF16, kBF16 };

// The score rule of the ABI (attnrt_attention_desc), for one sequence and a range of q heads.
struct RowParams {
  int32_t heads = 0;        // q heads in this chunk
  int32_t head0 = 0;        // first q head of the chunk (for sinks / alibi / lse / dsinks)
  int32_t heads_total = 0;  // heads_q of the call
  int32_t q_len = 0, k_len = 0;
  float softmax_scale = 0, softcap = 0;
  int32_t window_left = -1, window_right = -1;
  const float* sinks = nullptr;  // [heads_total] or null
  const float* alibi = nullptr;  // slopes of this sequence: [heads_total] or null
  float* lse = nullptr;          // element (h, i) at lse[h * lse_head_stride + i] or null
  int64_t lse_head_stride = 0;
};

// P = softmax(rule(S)) in `dtype` (rounded), lse in fp32. S is raw q.k in fp32.
cudaError_t softmax_forward(const RowParams& r, const float* s, void* p, Dtype dtype, cudaStream_t stream);

// From S (raw, fp32), dP = dO V^T (fp32) and the forward's lse: dS_raw = d(loss)/d(q.k) in
// `dtype`, i.e. P (dP - D) times softmax_scale and the softcap derivative, D = rowsum(P dP).
// With sinks, dsink_rows[h * q_len + i] = -exp(sink_h - lse_i) D_i (a buffer of the chunk).
cudaError_t softmax_backward(const RowParams& r, const float* s, const float* dp, void* ds, Dtype dtype,
                             float* dsink_rows, cudaStream_t stream);

// dsinks[h] (+)= sum over rows of dsink_rows[h * rows + i], in a fixed order. `accumulate`
// adds to what is there (later sequences), else overwrites.
cudaError_t reduce_rows(const float* dsink_rows, int32_t heads, int32_t rows, float* dsinks, bool accumulate,
                        cudaStream_t stream);

// dst[r, h, :] = (dtype) src[r, h, :] for r < rows, h < heads, with dst strides in elements;
// src is compact fp32 [rows, heads, dim], or null to write zeros.
cudaError_t convert_rows(const float* src, void* dst, Dtype dtype, int32_t rows, int32_t heads, int32_t dim,
                         int64_t dst_row_stride, int64_t dst_head_stride, cudaStream_t stream);

// Gathers one sequence's keys from a paged cache: dst[j, h, :] = pages[table[j / page_size],
// j % page_size, h, :] for j < k_len; dst is compact [k_len, heads, dim].
cudaError_t gather_pages(const void* pages, const int32_t* table_row, void* dst, Dtype dtype, int32_t k_len,
                         int32_t page_size, int32_t heads, int32_t dim, int64_t page_stride, int64_t row_stride,
                         int64_t head_stride, cudaStream_t stream);

}  // namespace attnrt::cuda::eager
