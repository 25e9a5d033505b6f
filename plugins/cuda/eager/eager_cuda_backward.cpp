// The CUDA eager backward: per sequence and chunk of kv heads, S and P recomputed from the
// forward's lse, then dV = P^T dO, dP = dO V^T, dS (row kernel), dQ = dS K, dK = dS^T Q; dK and
// dV accumulate over the GQA group in fp32 and are written once per sequence.
#include "eager_cuda_call.hpp"

#include <algorithm>

namespace attnrt::plugins::eager_cuda {

void Call::backward(const attnrt_attention_desc& d, const attnrt_backward_args& a) const {
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
    const char* qb = static_cast<const char*>(q.data) + first_row(q, d, s.q_row0, b) * es;
    const char* kb = static_cast<const char*>(k.data) + first_row(k, d, s.k_row0, b) * es;
    const char* vb = static_cast<const char*>(v.data) + first_row(v, d, s.k_row0, b) * es;
    const char* dob = static_cast<const char*>(dout.data) + first_row(dout, d, s.q_row0, b) * es;
    char* dqb = static_cast<char*>(dq.data) + first_row(dq, d, s.q_row0, b) * es;
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
          check_cuda(cuda::eager::softmax_backward(r, s32, dp32, p, kernel_dtype(d.dtype), rows, stream),
                     "eager softmax backward");
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
        gemm(CUBLAS_OP_N, CUBLAS_OP_T, d.head_dim_v, s.k_len, s.q_len, dob + (h0 + j) * dout.head_stride * es, d.dtype,
             dout.row_stride, group * dout.head_stride, p + j * qk * es, d.dtype, s.k_len, group * qk, 1.f,
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
    char* dkb = static_cast<char*>(dk.data) + first_row(dk, d, s.k_row0, b) * es;
    char* dvb = static_cast<char*>(dv.data) + first_row(dv, d, s.k_row0, b) * es;
    check_cuda(cuda::eager::convert_rows(dk32, dkb, kernel_dtype(d.dtype), s.k_len, d.heads_kv, d.head_dim,
                                         dk.row_stride, dk.head_stride, stream),
               "writing dk");
    check_cuda(cuda::eager::convert_rows(dv32, dvb, kernel_dtype(d.dtype), s.k_len, d.heads_kv, d.head_dim_v,
                                         dv.row_stride, dv.head_stride, stream),
               "writing dv");
  }
}

}  // namespace attnrt::plugins::eager_cuda
