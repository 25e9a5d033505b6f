// What the CUDA eager plugin's forward and backward share: how the workspace is cut, one call's
// sequences, the row kernels' parameters, and the cuBLAS products (eager_cuda_call.cpp). Private
// to the plugin.
#pragma once

#include "eager_cuda_kernels.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt_cuda/cuda_check.hpp>
#include <attnrt_cuda/make_params.hpp>

#include <cublas_v2.h>

#include <vector>

namespace attnrt::plugins::eager_cuda {

using cuda::check_cuda;
using cuda::eager::Dtype;

constexpr size_t kCublasWorkspace = 32u << 20;  // handed to cuBLAS (no hidden allocation)

void check_cublas(cublasStatus_t s, const char* what);

inline size_t elem_size(attnrt_dtype t) { return t == ATTNRT_DTYPE_FP32 ? 4 : 2; }
inline Dtype kernel_dtype(attnrt_dtype t) {
  return t == ATTNRT_DTYPE_FP32 ? Dtype::kF32 : t == ATTNRT_DTYPE_FP16 ? Dtype::kF16 : Dtype::kBF16;
}

// How the workspace is cut: kv heads per chunk and the offsets of each buffer.
struct Layout {
  int32_t chunk_kv = 1;  // kv heads per chunk
  size_t cublas = 0, s32 = 0, p = 0, dp32 = 0, dk32 = 0, dv32 = 0, kg = 0, vg = 0, dsink = 0, total = 0;

  Layout(const attnrt_attention_desc& d, bool backward);
};

std::vector<int32_t> to_host(const DLTensor* t, size_t n, cudaStream_t stream);

// One sequence's geometry and base pointers (head 0, token 0).
struct SeqView {
  int32_t q_len = 0, k_len = 0;
  int64_t q_row0 = 0, k_row0 = 0;  // token index of row 0 in the packed / batched tensors
};

template <class Args>
std::vector<SeqView> sequences(const attnrt_attention_desc& d, const Args& a, cudaStream_t stream) {
  std::vector<SeqView> seqs(d.batch);
  const std::vector<int32_t> cq = to_host(d.is_varlen ? a.cu_seqlens_q : nullptr, d.batch + 1, stream);
  const std::vector<int32_t> ck = to_host(d.is_varlen ? a.cu_seqlens_k : nullptr, d.batch + 1, stream);
  const std::vector<int32_t> used = to_host(a.seqused_k, d.batch, stream);
  for (int32_t b = 0; b < d.batch; ++b) {
    SeqView& s = seqs[b];
    if (d.is_varlen) {
      s.q_len = cq[b + 1] - cq[b];
      s.k_len = ck[b + 1] - ck[b];
      s.q_row0 = cq[b];
      s.k_row0 = ck[b];
    } else {
      s.q_len = d.seqlen_q;
      s.k_len = d.seqlen_k;
      s.q_row0 = int64_t(b) * d.seqlen_q;
      s.k_row0 = int64_t(b) * d.seqlen_k;
    }
    if (a.seqused_k) s.k_len = used[b];
  }
  return seqs;
}

// Element offset of sequence b's first token in `t`: from cu_seqlens when varlen (row0), else the
// batch stride, which need not be seqlen x the row stride (a [batch, heads, seqlen, head_dim]
// tensor seen through a transpose, as transformers hands its q/k/v over).
inline int64_t first_row(const cuda::TensorRef& t, const attnrt_attention_desc& d, int64_t row0, size_t b) {
  return d.is_varlen ? row0 * t.row_stride : static_cast<int64_t>(b) * t.batch_stride;
}

cuda::eager::RowParams row_params(const attnrt_attention_desc& d, const DLTensor* sinks, const DLTensor* alibi,
                                  const DLTensor* lse, const SeqView& s, int32_t b, int32_t h0, int32_t hc);

inline size_t elem_size_of(const DLTensor* t) { return t->dtype.bits / 8; }
inline cuda::TensorRef ref(const char* name, const DLTensor* t) { return cuda::detail::ref(name, t, elem_size_of(t)); }

// One call as the plugin hands it over: the instance's cuBLAS handle, already bound to the
// call's stream and to the cuBLAS part of its workspace, and the workspace with its layout.
struct Call {
  cublasHandle_t handle;
  cudaStream_t stream;
  char* ws;
  Layout L;

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a) const;    // eager_cuda_forward.cpp
  void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a) const;  // eager_cuda_backward.cpp

  // C = A op B in cuBLAS's column-major terms, batched with element strides.
  void gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, const void* A, attnrt_dtype at,
            int64_t lda, int64_t sa, const void* B, attnrt_dtype bt, int64_t ldb, int64_t sb, float beta, void* C,
            attnrt_dtype ct, int64_t ldc, int64_t sc, int32_t batch) const;
};

}  // namespace attnrt::plugins::eager_cuda
