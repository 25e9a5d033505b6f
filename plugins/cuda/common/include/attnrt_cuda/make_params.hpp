// Host side: AttentionParams from the ABI's descriptor and DLPack tensors (already checked by
// sdk::check_forward / check_backward). Also enforces what the tensor-core kernels need beyond
// the ABI: 16-byte aligned rows (cp.async moves 8 elements at a time) and compact lse and
// cu_seqlens. A tensor that breaks this is refused by name (ATTNRT_ERROR_UNSUPPORTED).
#pragma once

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_cuda/params.hpp>

#include <string>

namespace attnrt::cuda {

namespace detail {

inline int64_t stride_of(const DLTensor& t, int dim) {
  if (t.strides) return t.strides[dim];
  int64_t s = 1;
  for (int i = t.ndim - 1; i > dim; --i) s *= t.shape[i];
  return s;
}

inline void* data_of(const DLTensor* t) { return t ? static_cast<char*>(t->data) + t->byte_offset : nullptr; }

// [batch, seqlen, heads, dim] or varlen [total, heads, dim].
inline TensorRef ref(const char* name, const DLTensor* t, size_t vector_bytes) {
  TensorRef r;
  r.data = data_of(t);
  const int nd = t->ndim;
  r.head_stride = stride_of(*t, nd - 2);
  r.row_stride = stride_of(*t, nd - 3);
  r.batch_stride = nd == 4 ? stride_of(*t, 0) : 0;
  const size_t elem = t->dtype.bits / 8;
  const size_t vec = vector_bytes / elem;
  if (reinterpret_cast<uintptr_t>(r.data) % vector_bytes != 0 || r.head_stride % vec != 0 || r.row_stride % vec != 0 ||
      r.batch_stride % vec != 0) {
    throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, std::string(name) + " " + sdk::shape_string(*t) +
                                                   ": rows must start on " + std::to_string(vector_bytes) +
                                                   "-byte boundaries (data pointer and strides multiples of " +
                                                   std::to_string(vec) + " elements)");
  }
  return r;
}

inline void require_compact(const char* name, const DLTensor* t) {
  if (t == nullptr || t->strides == nullptr) return;
  int64_t expect = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    if (t->shape[i] > 1 && t->strides[i] != expect) {
      throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, std::string(name) + " " + sdk::shape_string(*t) +
                                                     ": must be compact (row-major) for the CUDA kernels");
    }
    expect *= t->shape[i];
  }
}

// What forward and backward arguments share: sizes, score rule, q/k/v/out and sequence tensors.
template <class Args>
void common(AttentionParams& p, const attnrt_attention_desc& d, const Args& a, size_t vector_bytes) {
  p.q = ref("q", a.q, vector_bytes);
  p.k = ref("k", a.k, vector_bytes);
  p.v = ref("v", a.v, vector_bytes);
  p.out = ref("out", a.out, vector_bytes);
  p.batch = d.batch;
  p.heads_q = d.heads_q;
  p.heads_kv = d.heads_kv;
  p.seqlen_q = d.seqlen_q;
  p.seqlen_k = d.seqlen_k;
  p.head_dim = d.head_dim;
  p.head_dim_v = d.head_dim_v;
  p.softmax_scale = d.softmax_scale;
  p.softcap = d.softcap;
  p.window_left = d.window_left;
  p.window_right = sdk::effective_window_right(d);
  p.total_q = d.is_varlen ? a.q->shape[0] : int64_t(d.batch) * d.seqlen_q;
  require_compact("cu_seqlens_q", a.cu_seqlens_q);
  require_compact("cu_seqlens_k", a.cu_seqlens_k);
  require_compact("seqused_k", a.seqused_k);
  p.cu_seqlens_q = static_cast<const int32_t*>(data_of(a.cu_seqlens_q));
  p.cu_seqlens_k = static_cast<const int32_t*>(data_of(a.cu_seqlens_k));
  p.seqused_k = static_cast<const int32_t*>(data_of(a.seqused_k));
  if (d.has_sinks) {
    require_compact("sinks", a.sinks);
    p.sinks = static_cast<const float*>(data_of(a.sinks));
  }
  if (d.is_paged && a.block_table) {
    if (a.block_table->shape[1] > 1 && stride_of(*a.block_table, 1) != 1) {
      throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED,
                       "block_table " + sdk::shape_string(*a.block_table) + ": its page entries must be contiguous");
    }
    p.block_table = static_cast<const int32_t*>(data_of(a.block_table));
    p.block_table_stride = stride_of(*a.block_table, 0);
    p.page_size = d.page_size;
  }
}

}  // namespace detail

// `vector_bytes`: the alignment the plugin's kernels need of every row (16 for cp.async).
inline AttentionParams make_params(const attnrt_attention_desc& d, const attnrt_forward_args& a, size_t vector_bytes) {
  AttentionParams p;
  detail::common(p, d, a, vector_bytes);
  if (d.return_lse) {
    detail::require_compact("lse", a.lse);
    p.lse = static_cast<float*>(detail::data_of(a.lse));
  }
  return p;
}

inline AttentionParams make_params(const attnrt_attention_desc& d, const attnrt_backward_args& a, size_t vector_bytes) {
  AttentionParams p;
  detail::common(p, d, a, vector_bytes);
  p.dout = detail::ref("dout", a.dout, vector_bytes);
  p.dq = detail::ref("dq", a.dq, vector_bytes);
  p.dk = detail::ref("dk", a.dk, vector_bytes);
  p.dv = detail::ref("dv", a.dv, vector_bytes);
  detail::require_compact("lse", a.lse);
  p.lse = static_cast<float*>(detail::data_of(a.lse));
  if (d.has_sinks) {
    detail::require_compact("dsinks", a.dsinks);
    p.dsinks = static_cast<float*>(detail::data_of(a.dsinks));
  }
  return p;
}

}  // namespace attnrt::cuda
