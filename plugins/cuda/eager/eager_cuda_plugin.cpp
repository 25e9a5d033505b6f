// eager on CUDA: the materialized path. Per sequence and chunk of heads, cuBLAS computes the
// raw scores S = Q K^T (fp32), a row kernel applies the score rule and softmax (P rounded to the
// call's dtype, as PyTorch's math path does), and cuBLAS computes O = P V. Backward recomputes
// S and P from lse and runs dV = P^T dO, dP = dO V^T, dS, dQ = dS K, dK = dS^T Q, accumulating
// dK/dV over the GQA group in fp32. Same features as the CPU eager (all but dropout; paged KV
// forward only). It is the GPU's readable baseline, not a fast path: it reads cu_seqlens back
// to the host (a synchronization per call) and holds heads x seqlen_q x seqlen_k scores.
#include "eager_cuda_kernels.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_cuda/cuda_check.hpp>
#include <attnrt_cuda/make_params.hpp>

#include <cublas_v2.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

namespace attnrt::plugins::eager_cuda {
namespace {

using cuda::check_cuda;
using cuda::eager::Dtype;

constexpr size_t kCublasWorkspace = 32u << 20;       // handed to cuBLAS (no hidden allocation)
constexpr size_t kScoreBudget = size_t(2) << 30;     // scores per chunk of heads
constexpr size_t kAlign = 256;

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

void check_cublas(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw sdk::Error(s == CUBLAS_STATUS_ALLOC_FAILED ? ATTNRT_ERROR_OUT_OF_MEMORY : ATTNRT_ERROR_DEVICE,
                   std::string(what) + ": cuBLAS " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}

size_t elem_size(attnrt_dtype t) { return t == ATTNRT_DTYPE_FP32 ? 4 : 2; }
Dtype kernel_dtype(attnrt_dtype t) {
  return t == ATTNRT_DTYPE_FP32 ? Dtype::kF32 : t == ATTNRT_DTYPE_FP16 ? Dtype::kF16 : Dtype::kBF16;
}
cudaDataType_t blas_dtype(attnrt_dtype t) {
  return t == ATTNRT_DTYPE_FP32 ? CUDA_R_32F : t == ATTNRT_DTYPE_FP16 ? CUDA_R_16F : CUDA_R_16BF;
}

// How the workspace is cut: kv heads per chunk and the offsets of each buffer.
struct Layout {
  int32_t chunk_kv = 1;  // kv heads per chunk
  size_t cublas = 0, s32 = 0, p = 0, dp32 = 0, dk32 = 0, dv32 = 0, kg = 0, vg = 0, dsink = 0, total = 0;

  Layout(const attnrt_attention_desc& d, bool backward) {
    const size_t group = d.heads_q / std::max(d.heads_kv, 1);
    const size_t scores = size_t(d.seqlen_q) * d.seqlen_k * group;  // per kv head
    const size_t per_kv = scores * (4 + elem_size(d.dtype) + (backward ? 4 : 0));
    chunk_kv = int32_t(std::clamp<size_t>(per_kv ? kScoreBudget / per_kv : d.heads_kv, 1, std::max(d.heads_kv, 1)));
    const size_t n = scores * chunk_kv;
    const size_t kv_rows = size_t(d.seqlen_k) * d.heads_kv;
    size_t at = 0;
    auto take = [&](size_t bytes) { const size_t o = at; at += align_up(bytes); return o; };
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
};

std::vector<int32_t> to_host(const DLTensor* t, size_t n, cudaStream_t stream) {
  std::vector<int32_t> h(n);
  if (!t || n == 0) return h;
  check_cuda(cudaMemcpyAsync(h.data(), static_cast<const char*>(t->data) + t->byte_offset, n * 4,
                             cudaMemcpyDeviceToHost, stream), "reading cu_seqlens");
  check_cuda(cudaStreamSynchronize(stream), "reading cu_seqlens");
  return h;
}

// One sequence's geometry and base pointers (head 0, token 0).
struct SeqView {
  int32_t q_len = 0, k_len = 0;
  int64_t q_row0 = 0, k_row0 = 0;  // token index of row 0 in the packed / batched tensors
};

class EagerCudaPlugin {
 public:
  static constexpr const char* kName = "eager";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr const char* kDescription =
      "materialized scores on CUDA (cuBLAS products, softmax kernel): the GPU's readable baseline";

  static attnrt_capabilities capabilities() {
    attnrt_capabilities c{};
    c.struct_size = sizeof c;
    c.devices = ATTNRT_DEVICE_BIT_CUDA;
    c.dtypes = ATTNRT_DTYPE_BIT_FP32 | ATTNRT_DTYPE_BIT_FP16 | ATTNRT_DTYPE_BIT_BF16;
    c.features = ATTNRT_FEATURE_GQA | ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SLIDING_WINDOW |
                 ATTNRT_FEATURE_SOFTCAP | ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_ALIBI | ATTNRT_FEATURE_VARLEN |
                 ATTNRT_FEATURE_PAGED_KV | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_BACKWARD |
                 ATTNRT_FEATURE_DETERMINISTIC | ATTNRT_FEATURE_HEAD_DIM_V;
    c.min_head_dim = 1;
    c.max_head_dim = 1024;
    c.min_cuda_arch = 50;
    return c;
  }

  explicit EagerCudaPlugin(const attnrt_host_info& /*host*/) {}
  ~EagerCudaPlugin() {
    if (handle_) cublasDestroy(handle_);
  }

  std::string supports(const attnrt_attention_desc& d) const {
    sdk::check_desc(d);
    static const attnrt_capabilities caps = capabilities();
    return sdk::capability_gap(caps, d);
  }

  size_t workspace_size(const attnrt_attention_desc& d, bool backward, int /*num_threads*/) const {
    sdk::check_desc(d);
    return Layout(d, backward).total;
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    sdk::check_forward(d, a);
    sdk::require_supported(supports(d));
    std::lock_guard<std::mutex> lock(mutex_);  // one cuBLAS handle per instance
    const Layout L(d, false);
    sdk::require_workspace(e, L.total, 0);
    cudaStream_t stream = prepare(d, e, L);
    char* ws = static_cast<char*>(e.workspace);
    const std::vector<SeqView> seqs = sequences(d, a, stream);
    const auto q = ref("q", a.q), k = ref("k", a.k), v = ref("v", a.v), out = ref("out", a.out);
    const int32_t group = d.heads_q / d.heads_kv;
    const size_t es = elem_size(d.dtype);
    for (size_t b = 0; b < seqs.size(); ++b) {
      const SeqView& s = seqs[b];
      if (s.q_len == 0) continue;
      const char* kb = static_cast<const char*>(k.data) + s.k_row0 * k.row_stride * es;
      const char* vb = static_cast<const char*>(v.data) + s.k_row0 * v.row_stride * es;
      int64_t k_ld = k.row_stride, v_ld = v.row_stride, k_hs = k.head_stride, v_hs = v.head_stride;
      if (d.is_paged) {
        gather(d, a.k, a.v, a.block_table, int32_t(b), s.k_len, ws + L.kg, ws + L.vg, stream);
        kb = ws + L.kg;
        vb = ws + L.vg;
        k_ld = int64_t(d.heads_kv) * d.head_dim;
        v_ld = int64_t(d.heads_kv) * d.head_dim_v;
        k_hs = d.head_dim;
        v_hs = d.head_dim_v;
      }
      const char* qb = static_cast<const char*>(q.data) + s.q_row0 * q.row_stride * es;
      char* ob = static_cast<char*>(out.data) + s.q_row0 * out.row_stride * es;
      for (int32_t hk0 = 0; hk0 < d.heads_kv; hk0 += L.chunk_kv) {
        const int32_t ck = std::min(L.chunk_kv, d.heads_kv - hk0), hc = ck * group, h0 = hk0 * group;
        const int64_t qk = int64_t(s.q_len) * s.k_len;
        float* s32 = reinterpret_cast<float*>(ws + L.s32);
        char* p = ws + L.p;
        if (s.k_len > 0) {
          // S^T (k_len x q_len, column-major) = K Q^T for each head j of the group, batched over kv heads.
          for (int32_t j = 0; j < group; ++j) {
            gemm(CUBLAS_OP_T, CUBLAS_OP_N, s.k_len, s.q_len, d.head_dim, kb + hk0 * k_hs * es, d.dtype, k_ld, k_hs,
                 qb + (h0 + j) * q.head_stride * es, d.dtype, q.row_stride, group * q.head_stride, 0.f,
                 s32 + j * qk, ATTNRT_DTYPE_FP32, s.k_len, group * qk, ck);
          }
        }
        cuda::eager::RowParams r = row_params(d, a.sinks, a.alibi_slopes, a.lse, s, int32_t(b), h0, hc);
        check_cuda(cuda::eager::softmax_forward(r, s32, p, kernel_dtype(d.dtype), stream), "eager softmax");
        if (s.k_len > 0) {
          // O^T (head_dim_v x q_len) = V^T P^T.
          for (int32_t j = 0; j < group; ++j) {
            gemm(CUBLAS_OP_N, CUBLAS_OP_N, d.head_dim_v, s.q_len, s.k_len, vb + hk0 * v_hs * es, d.dtype, v_ld, v_hs,
                 p + j * qk * es, d.dtype, s.k_len, group * qk, 0.f, ob + (h0 + j) * out.head_stride * es, d.dtype,
                 out.row_stride, group * out.head_stride, ck);
          }
        } else {
          check_cuda(cuda::eager::convert_rows(nullptr, ob + h0 * out.head_stride * es, kernel_dtype(d.dtype), s.q_len,
                                               hc, d.head_dim_v, out.row_stride, out.head_stride, stream),
                     "zeroing out");
        }
      }
    }
  }

  void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e) {
    sdk::check_backward(d, a);
    sdk::require_supported(supports(d));
    if (d.is_paged) throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, "backward through a paged KV cache is not supported");
    std::lock_guard<std::mutex> lock(mutex_);
    const Layout L(d, true);
    sdk::require_workspace(e, L.total, 0);
    cudaStream_t stream = prepare(d, e, L);
    char* ws = static_cast<char*>(e.workspace);
    const std::vector<SeqView> seqs = sequences(d, a, stream);
    const auto q = ref("q", a.q), k = ref("k", a.k), v = ref("v", a.v), dout = ref("dout", a.dout);
    const auto dq = ref("dq", a.dq), dk = ref("dk", a.dk), dv = ref("dv", a.dv);
    const int32_t group = d.heads_q / d.heads_kv;
    const size_t es = elem_size(d.dtype);
    float* dsinks = d.has_sinks ? static_cast<float*>(cuda::detail::data_of(a.dsinks)) : nullptr;
    if (dsinks) check_cuda(cudaMemsetAsync(dsinks, 0, sizeof(float) * d.heads_q, stream), "zeroing dsinks");
    const int64_t kv_dk = int64_t(d.heads_kv) * d.head_dim, kv_dv = int64_t(d.heads_kv) * d.head_dim_v;
    float* dk32 = reinterpret_cast<float*>(ws + L.dk32);
    float* dv32 = reinterpret_cast<float*>(ws + L.dv32);
    for (size_t b = 0; b < seqs.size(); ++b) {
      const SeqView& s = seqs[b];
      const char* qb = static_cast<const char*>(q.data) + s.q_row0 * q.row_stride * es;
      const char* kb = static_cast<const char*>(k.data) + s.k_row0 * k.row_stride * es;
      const char* vb = static_cast<const char*>(v.data) + s.k_row0 * v.row_stride * es;
      const char* dob = static_cast<const char*>(dout.data) + s.q_row0 * dout.row_stride * es;
      char* dqb = static_cast<char*>(dq.data) + s.q_row0 * dq.row_stride * es;
      check_cuda(cudaMemsetAsync(dk32, 0, sizeof(float) * s.k_len * kv_dk, stream), "zeroing dk");
      check_cuda(cudaMemsetAsync(dv32, 0, sizeof(float) * s.k_len * kv_dv, stream), "zeroing dv");
      for (int32_t hk0 = 0; hk0 < d.heads_kv && s.q_len > 0; hk0 += L.chunk_kv) {
        const int32_t ck = std::min(L.chunk_kv, d.heads_kv - hk0), hc = ck * group, h0 = hk0 * group;
        const int64_t qk = int64_t(s.q_len) * s.k_len;
        float* s32 = reinterpret_cast<float*>(ws + L.s32);
        float* dp32 = reinterpret_cast<float*>(ws + L.dp32);
        char* p = ws + L.p;  // P, then dS
        if (s.k_len == 0) {
          check_cuda(cuda::eager::convert_rows(nullptr, dqb + h0 * dq.head_stride * es, kernel_dtype(d.dtype), s.q_len,
                                               hc, d.head_dim, dq.row_stride, dq.head_stride, stream),
                     "zeroing dq");
          if (dsinks) {
            cuda::eager::RowParams r = row_params(d, a.sinks, a.alibi_slopes, a.lse, s, int32_t(b), h0, hc);
            float* rows = reinterpret_cast<float*>(ws + L.dsink);
            check_cuda(cuda::eager::softmax_backward(r, s32, dp32, p, kernel_dtype(d.dtype), rows, stream), "eager softmax backward");
            check_cuda(cuda::eager::reduce_rows(rows, hc, s.q_len, dsinks + h0, true, stream), "dsinks");
          }
          continue;
        }
        cuda::eager::RowParams r = row_params(d, a.sinks, a.alibi_slopes, a.lse, s, int32_t(b), h0, hc);
        for (int32_t j = 0; j < group; ++j) {
          // S^T = K Q^T; dP^T = V dO^T.
          gemm(CUBLAS_OP_T, CUBLAS_OP_N, s.k_len, s.q_len, d.head_dim, kb + hk0 * k.head_stride * es, d.dtype,
               k.row_stride, k.head_stride, qb + (h0 + j) * q.head_stride * es, d.dtype, q.row_stride,
               group * q.head_stride, 0.f, s32 + j * qk, ATTNRT_DTYPE_FP32, s.k_len, group * qk, ck);
          gemm(CUBLAS_OP_T, CUBLAS_OP_N, s.k_len, s.q_len, d.head_dim_v, vb + hk0 * v.head_stride * es, d.dtype,
               v.row_stride, v.head_stride, dob + (h0 + j) * dout.head_stride * es, d.dtype, dout.row_stride,
               group * dout.head_stride, 0.f, dp32 + j * qk, ATTNRT_DTYPE_FP32, s.k_len, group * qk, ck);
        }
        // P recomputed by the forward's own row kernel (lse output off: the forward's lse stays
        // untouched; same inputs and code give the same P), then dV^T += dO^T P.
        cuda::eager::RowParams fr = r;
        fr.lse = nullptr;
        check_cuda(cuda::eager::softmax_forward(fr, s32, p, kernel_dtype(d.dtype), stream), "eager softmax");
        for (int32_t j = 0; j < group; ++j) {
          gemm(CUBLAS_OP_N, CUBLAS_OP_T, d.head_dim_v, s.k_len, s.q_len, dob + (h0 + j) * dout.head_stride * es,
               d.dtype, dout.row_stride, group * dout.head_stride, p + j * qk * es, d.dtype, s.k_len, group * qk, 1.f,
               dv32 + hk0 * d.head_dim_v, ATTNRT_DTYPE_FP32, kv_dv, d.head_dim_v, ck);
        }
        float* dsink_rows = dsinks ? reinterpret_cast<float*>(ws + L.dsink) : nullptr;
        check_cuda(cuda::eager::softmax_backward(r, s32, dp32, p, kernel_dtype(d.dtype), dsink_rows, stream),
                   "eager softmax backward");
        if (dsinks) check_cuda(cuda::eager::reduce_rows(dsink_rows, hc, s.q_len, dsinks + h0, true, stream), "dsinks");
        for (int32_t j = 0; j < group; ++j) {
          // dQ^T = K^T dS^T (one writer per q head); dK^T += Q^T dS.
          gemm(CUBLAS_OP_N, CUBLAS_OP_N, d.head_dim, s.q_len, s.k_len, kb + hk0 * k.head_stride * es, d.dtype,
               k.row_stride, k.head_stride, p + j * qk * es, d.dtype, s.k_len, group * qk, 0.f,
               dqb + (h0 + j) * dq.head_stride * es, d.dtype, dq.row_stride, group * dq.head_stride, ck);
          gemm(CUBLAS_OP_N, CUBLAS_OP_T, d.head_dim, s.k_len, s.q_len, qb + (h0 + j) * q.head_stride * es, d.dtype,
               q.row_stride, group * q.head_stride, p + j * qk * es, d.dtype, s.k_len, group * qk, 1.f,
               dk32 + hk0 * d.head_dim, ATTNRT_DTYPE_FP32, kv_dk, d.head_dim, ck);
        }
      }
      char* dkb = static_cast<char*>(dk.data) + s.k_row0 * dk.row_stride * es;
      char* dvb = static_cast<char*>(dv.data) + s.k_row0 * dv.row_stride * es;
      check_cuda(cuda::eager::convert_rows(dk32, dkb, kernel_dtype(d.dtype), s.k_len, d.heads_kv, d.head_dim,
                                           dk.row_stride, dk.head_stride, stream), "writing dk");
      check_cuda(cuda::eager::convert_rows(dv32, dvb, kernel_dtype(d.dtype), s.k_len, d.heads_kv, d.head_dim_v,
                                           dv.row_stride, dv.head_stride, stream), "writing dv");
    }
  }

 private:
  static cuda::TensorRef ref(const char* name, const DLTensor* t) { return cuda::detail::ref(name, t, elem_size_of(t)); }
  static size_t elem_size_of(const DLTensor* t) { return t->dtype.bits / 8; }

  cudaStream_t prepare(const attnrt_attention_desc& d, const attnrt_exec& e, const Layout& L) {
    cuda::use_device(d);
    if (handle_ && device_ != d.device.device_id) {
      cublasDestroy(handle_);
      handle_ = nullptr;
    }
    if (!handle_) {
      check_cublas(cublasCreate(&handle_), "cublasCreate");
      device_ = d.device.device_id;
    }
    cudaStream_t stream = static_cast<cudaStream_t>(e.stream);
    check_cublas(cublasSetStream(handle_, stream), "cublasSetStream");
    check_cublas(cublasSetWorkspace(handle_, static_cast<char*>(e.workspace) + L.cublas, kCublasWorkspace),
                 "cublasSetWorkspace");
    return stream;
  }

  template <class Args>
  std::vector<SeqView> sequences(const attnrt_attention_desc& d, const Args& a, cudaStream_t stream) const {
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

  static cuda::eager::RowParams row_params(const attnrt_attention_desc& d, const DLTensor* sinks, const DLTensor* alibi,
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

  void gather(const attnrt_attention_desc& d, const DLTensor* k, const DLTensor* v, const DLTensor* table, int32_t b,
              int32_t k_len, char* kg, char* vg, cudaStream_t stream) const {
    const int32_t* row = static_cast<const int32_t*>(cuda::detail::data_of(table)) + int64_t(b) * table->shape[1];
    const auto kr = ref("k", k), vr = ref("v", v);
    check_cuda(cuda::eager::gather_pages(kr.data, row, kg, kernel_dtype(d.dtype), k_len, d.page_size, d.heads_kv,
                                         d.head_dim, cuda::detail::stride_of(*k, 0), kr.row_stride, kr.head_stride, stream),
               "gathering k pages");
    check_cuda(cuda::eager::gather_pages(vr.data, row, vg, kernel_dtype(d.dtype), k_len, d.page_size, d.heads_kv,
                                         d.head_dim_v, cuda::detail::stride_of(*v, 0), vr.row_stride, vr.head_stride, stream),
               "gathering v pages");
  }

  // C = A op B in cuBLAS's column-major terms, batched with element strides.
  void gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, const void* A, attnrt_dtype at,
            int64_t lda, int64_t sa, const void* B, attnrt_dtype bt, int64_t ldb, int64_t sb, float beta, void* C,
            attnrt_dtype ct, int64_t ldc, int64_t sc, int32_t batch) {
    const float alpha = 1.f;
    check_cublas(cublasGemmStridedBatchedEx(handle_, ta, tb, int(m), int(n), int(k), &alpha, A, blas_dtype(at), int(lda), sa,
                                            B, blas_dtype(bt), int(ldb), sb, &beta, C, blas_dtype(ct), int(ldc), sc, batch,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "eager matrix product");
  }

  // The SDK lets calls on one instance overlap; the handle's stream and workspace are per call,
  // so calls are serialized here (eager is the debugging path, not the concurrent one).
  std::mutex mutex_;
  cublasHandle_t handle_ = nullptr;
  int device_ = -1;
};

}  // namespace
}  // namespace attnrt::plugins::eager_cuda

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::eager_cuda::EagerCudaPlugin)
