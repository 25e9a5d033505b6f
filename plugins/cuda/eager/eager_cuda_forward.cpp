// The CUDA eager forward: per sequence and chunk of kv heads, S = Q K^T by cuBLAS (fp32), the
// row kernel's softmax (P rounded to the call's dtype; lse when asked), O = P V by cuBLAS. A
// paged K/V is first gathered into the workspace, one sequence at a time.
#include "eager_cuda_call.hpp"

#include <algorithm>

namespace attnrt::plugins::eager_cuda {
namespace {

void gather(const attnrt_attention_desc& d, const DLTensor* k, const DLTensor* v, const DLTensor* table, int32_t b,
            int32_t k_len, char* kg, char* vg, cudaStream_t stream) {
  const int32_t* row = static_cast<const int32_t*>(cuda::detail::data_of(table)) + int64_t(b) * table->shape[1];
  const auto kr = ref("k", k), vr = ref("v", v);
  check_cuda(
      cuda::eager::gather_pages(kr.data, row, kg, kernel_dtype(d.dtype), k_len, d.page_size, d.heads_kv, d.head_dim,
                                cuda::detail::stride_of(*k, 0), kr.row_stride, kr.head_stride, stream),
      "gathering k pages");
  check_cuda(
      cuda::eager::gather_pages(vr.data, row, vg, kernel_dtype(d.dtype), k_len, d.page_size, d.heads_kv, d.head_dim_v,
                                cuda::detail::stride_of(*v, 0), vr.row_stride, vr.head_stride, stream),
      "gathering v pages");
}

}  // namespace

void Call::forward(const attnrt_attention_desc& d, const attnrt_forward_args& a) const {
  const std::vector<SeqView> seqs = sequences(d, a, stream);
  const auto q = ref("q", a.q), k = ref("k", a.k), v = ref("v", a.v), out = ref("out", a.out);
  const int32_t group = d.heads_q / d.heads_kv;
  const size_t es = elem_size(d.dtype);
  for (size_t b = 0; b < seqs.size(); ++b) {
    const SeqView& s = seqs[b];
    if (s.q_len == 0) continue;
    const char* kb = static_cast<const char*>(k.data) + first_row(k, d, s.k_row0, b) * es;
    const char* vb = static_cast<const char*>(v.data) + first_row(v, d, s.k_row0, b) * es;
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
    const char* qb = static_cast<const char*>(q.data) + first_row(q, d, s.q_row0, b) * es;
    char* ob = static_cast<char*>(out.data) + first_row(out, d, s.q_row0, b) * es;
    for (int32_t hk0 = 0; hk0 < d.heads_kv; hk0 += L.chunk_kv) {
      const int32_t ck = std::min(L.chunk_kv, d.heads_kv - hk0), hc = ck * group, h0 = hk0 * group;
      const int64_t qk = int64_t(s.q_len) * s.k_len;
      float* s32 = reinterpret_cast<float*>(ws + L.s32);
      char* p = ws + L.p;
      if (s.k_len > 0) {
        // S^T (k_len x q_len, column-major) = K Q^T for each head j of the group, batched over kv heads.
        for (int32_t j = 0; j < group; ++j) {
          gemm(CUBLAS_OP_T, CUBLAS_OP_N, s.k_len, s.q_len, d.head_dim, kb + hk0 * k_hs * es, d.dtype, k_ld, k_hs,
               qb + (h0 + j) * q.head_stride * es, d.dtype, q.row_stride, group * q.head_stride, 0.f, s32 + j * qk,
               ATTNRT_DTYPE_FP32, s.k_len, group * qk, ck);
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

}  // namespace attnrt::plugins::eager_cuda
