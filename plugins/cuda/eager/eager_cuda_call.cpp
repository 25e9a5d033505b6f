// The CUDA eager plugin's shared pieces (eager_cuda_call.hpp): workspace layout, cu_seqlens read
// back, row kernel parameters, cuBLAS errors and products.
#include "eager_cuda_call.hpp"

#include <attnrt/validate.hpp>

#include <algorithm>
#include <string>

namespace attnrt::plugins::eager_cuda {
namespace {

constexpr size_t kScoreBudget = size_t(2) << 30;  // scores per chunk of heads
constexpr size_t kAlign = 256;

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

cudaDataType_t blas_dtype(attnrt_dtype t) {
  return t == ATTNRT_DTYPE_FP32 ? CUDA_R_32F : t == ATTNRT_DTYPE_FP16 ? CUDA_R_16F : CUDA_R_16BF;
}

}  // namespace

void check_cublas(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw sdk::Error(s == CUBLAS_STATUS_ALLOC_FAILED ? ATTNRT_ERROR_OUT_OF_MEMORY : ATTNRT_ERROR_DEVICE,
                   std::string(what) + ": cuBLAS " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}

Layout::Layout(const attnrt_attention_desc& d, bool backward) {
  const size_t group = d.heads_q / std::max(d.heads_kv, 1);
  const size_t scores = size_t(d.seqlen_q) * d.seqlen_k * group;  // per kv head
  const size_t per_kv = scores * (4 + elem_size(d.dtype) + (backward ? 4 : 0));
  chunk_kv = int32_t(std::clamp<size_t>(per_kv ? kScoreBudget / per_kv : d.heads_kv, 1, std::max(d.heads_kv, 1)));
  const size_t n = scores * chunk_kv;
  const size_t kv_rows = size_t(d.seqlen_k) * d.heads_kv;
  size_t at = 0;
  auto take = [&](size_t bytes) {
    const size_t o = at;
    at += align_up(bytes);
    return o;
  };
  cublas = take(kCublasWorkspace);
  s32 = take(n * 4);
  p = take(n * elem_size(d.dtype));
  if (backward) {
    dp32 = take(n * 4);
    dk32 = take(kv_rows * d.head_dim * 4);
    dv32 = take(kv_rows * d.head_dim_v * 4);
    dsink = take(size_t(chunk_kv) * group * d.seqlen_q * 4);
  }
  if (d.is_paged) {
    kg = take(kv_rows * d.head_dim * elem_size(d.dtype));
    vg = take(kv_rows * d.head_dim_v * elem_size(d.dtype));
  }
  total = at;
}

std::vector<int32_t> to_host(const DLTensor* t, size_t n, cudaStream_t stream) {
  std::vector<int32_t> h(n);
  if (!t || n == 0) return h;
  check_cuda(cudaMemcpyAsync(h.data(), static_cast<const char*>(t->data) + t->byte_offset, n * 4,
                             cudaMemcpyDeviceToHost, stream),
             "reading cu_seqlens");
  check_cuda(cudaStreamSynchronize(stream), "reading cu_seqlens");
  return h;
}

cuda::eager::RowParams row_params(const attnrt_attention_desc& d, const DLTensor* sinks, const DLTensor* alibi,
                                  const DLTensor* lse, const SeqView& s, int32_t b, int32_t h0, int32_t hc) {
  cuda::eager::RowParams r;
  r.heads = hc;
  r.head0 = h0;
  r.heads_total = d.heads_q;
  r.q_len = s.q_len;
  r.k_len = s.k_len;
  r.softmax_scale = d.softmax_scale;
  r.softcap = d.softcap;
  r.window_left = d.window_left;
  r.window_right = sdk::effective_window_right(d);
  r.sinks = d.has_sinks ? static_cast<const float*>(cuda::detail::data_of(sinks)) : nullptr;
  if (d.has_alibi) {
    r.alibi = static_cast<const float*>(cuda::detail::data_of(alibi)) + (alibi->ndim == 2 ? int64_t(b) * d.heads_q : 0);
  }
  if (lse) {
    // lse [batch, heads, seqlen_q] or varlen [heads, total_q]: element (h, i) of sequence b.
    float* base = static_cast<float*>(cuda::detail::data_of(lse));
    if (d.is_varlen) {
      r.lse = base + s.q_row0;
      r.lse_head_stride = lse->shape[1];
    } else {
      r.lse = base + int64_t(b) * d.heads_q * d.seqlen_q;
      r.lse_head_stride = d.seqlen_q;
    }
  }
  return r;
}

void Call::gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, const void* A,
                attnrt_dtype at, int64_t lda, int64_t sa, const void* B, attnrt_dtype bt, int64_t ldb, int64_t sb,
                float beta, void* C, attnrt_dtype ct, int64_t ldc, int64_t sc, int32_t batch) const {
  const float alpha = 1.f;
  check_cublas(cublasGemmStridedBatchedEx(handle, ta, tb, int(m), int(n), int(k), &alpha, A, blas_dtype(at), int(lda),
                                          sa, B, blas_dtype(bt), int(ldb), sb, &beta, C, blas_dtype(ct), int(ldc), sc,
                                          batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "eager matrix product");
}

}  // namespace attnrt::plugins::eager_cuda
