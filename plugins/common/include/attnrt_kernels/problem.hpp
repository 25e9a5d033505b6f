// One attention call, unpacked from the ABI structs into what CPU kernels index: row views of
// every tensor, per-sequence lengths, and the score transform of attnrt_attention_desc.
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/validate.hpp>
#include <attnrt_kernels/layout.hpp>

#include <cmath>
#include <limits>

namespace attnrt::kernels {

namespace flex {
class Eval;
}

struct ForwardProblem {
  attnrt_attention_desc desc{};
  SeqLengths lengths;
  RowTensor q, k, v, out;
  LseTensor lse;                                // empty unless desc.return_lse
  const float* sinks = nullptr;                 // [heads_q] or null
  const DLTensor* alibi = nullptr;              // null without ALiBi
  int32_t window_left = -1, window_right = -1;  // causal folded into window_right
  const flex::Eval* flex = nullptr;             // flex_attention's mods and block mask (flex/eval.hpp), or null

  int32_t group() const { return desc.heads_q / desc.heads_kv; }
  KeyRange keys(int64_t b, int64_t i) const {
    return visible_keys(i, lengths.q_len(b), lengths.k_len(b), window_left, window_right);
  }
  // Distance term of ALiBi: |i + k_len - q_len - j| (FlashAttention-2's alibi convention).
  int64_t diag_offset(int64_t b) const { return lengths.k_len(b) - lengths.q_len(b); }
};

struct BackwardProblem : ForwardProblem {
  RowTensor dout, dq, dk, dv;
  float* dsinks = nullptr;  // [heads_q] or null
};

namespace detail {
inline RowTensor::Kind q_kind(const attnrt_attention_desc& d) {
  return d.is_varlen ? RowTensor::Kind::kVarlen : RowTensor::Kind::kPadded;
}
inline RowTensor::Kind kv_kind(const attnrt_attention_desc& d) {
  // Paged first: with is_varlen too (ABI 1.2) only the queries are packed.
  return d.is_paged ? RowTensor::Kind::kPaged : d.is_varlen ? RowTensor::Kind::kVarlen : RowTensor::Kind::kPadded;
}

template <class Args>
void fill_common(ForwardProblem& p, const attnrt_attention_desc& d, const Args& a) {
  p.desc = d;
  p.lengths.cu_q = d.is_varlen ? int32_data(a.cu_seqlens_q) : nullptr;
  p.lengths.cu_k = d.is_varlen && !d.is_paged ? int32_data(a.cu_seqlens_k) : nullptr;
  p.lengths.seqused_k = (d.is_varlen || d.is_paged) ? int32_data(a.seqused_k) : nullptr;
  p.lengths.seqlen_q = d.seqlen_q;
  p.lengths.seqlen_k = d.seqlen_k;
  const int32_t* cu_k = p.lengths.cu_k;
  p.q = RowTensor(a.q, q_kind(d), p.lengths.cu_q);
  p.k = RowTensor(a.k, kv_kind(d), cu_k, a.block_table, d.page_size);
  p.v = RowTensor(a.v, kv_kind(d), cu_k, a.block_table, d.page_size);
  p.sinks = d.has_sinks ? float_data(a.sinks) : nullptr;
  p.alibi = d.has_alibi ? a.alibi_slopes : nullptr;
  p.window_left = d.window_left;
  p.window_right = sdk::effective_window_right(d);
}
}  // namespace detail

inline ForwardProblem make_forward_problem(const attnrt_attention_desc& d, const attnrt_forward_args& a) {
  ForwardProblem p;
  detail::fill_common(p, d, a);
  p.out = RowTensor(a.out, detail::q_kind(d), p.lengths.cu_q);
  if (d.return_lse) p.lse = LseTensor(a.lse, d.is_varlen, p.lengths.cu_q);
  return p;
}

inline BackwardProblem make_backward_problem(const attnrt_attention_desc& d, const attnrt_backward_args& a) {
  BackwardProblem p;
  detail::fill_common(p, d, a);
  const int32_t* cu_k = p.lengths.cu_k;
  p.out = RowTensor(a.out, detail::q_kind(d), p.lengths.cu_q);
  p.lse = LseTensor(a.lse, d.is_varlen, p.lengths.cu_q);
  p.dout = RowTensor(a.dout, detail::q_kind(d), p.lengths.cu_q);
  p.dq = RowTensor(a.dq, detail::q_kind(d), p.lengths.cu_q);
  p.dk = RowTensor(a.dk, detail::kv_kind(d), cu_k, a.block_table, d.page_size);
  p.dv = RowTensor(a.dv, detail::kv_kind(d), cu_k, a.block_table, d.page_size);
  p.dsinks = d.has_sinks ? reinterpret_cast<float*>(const_cast<char*>(tensor_base(a.dsinks))) : nullptr;
  return p;
}

// dsinks[h] = sum over b of partial[b * heads + h], in a fixed order so repeats are
// bit-identical whatever the thread count (the deterministic flag's promise).
inline void reduce_sink_gradient(const float* partial, int64_t batch, int64_t heads, float* dsinks) {
  for (int64_t h = 0; h < heads; ++h) {
    float sum = 0.0f;
    for (int64_t b = 0; b < batch; ++b) sum += partial[b * heads + h];
    dsinks[h] = sum;
  }
}

inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace attnrt::kernels
