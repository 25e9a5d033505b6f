#include "eager_kernels.hpp"

#include <attnrt_kernels/flex/eval.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace attnrt::plugins::eager {

using kernels::kNegInf;

size_t workspace_floats_per_thread(const attnrt_attention_desc& d, bool backward) {
  const size_t sq = d.seqlen_q, sk = d.seqlen_k, hd = d.head_dim, hv = d.head_dim_v;
  // both: k [sk, hd], v [sk, hv], one q row, one out row
  const size_t kv_rows = sk * hd + sk * hv + hd + hv;
  // forward: the score matrix [sq, sk]; backward (p recomputed per element): dk and dv
  // accumulators, one dout row, one dq row
  return backward ? kv_rows + sk * hd + sk * hv + hv + hd : sq * sk + kv_rows;
}

size_t workspace_floats_shared(const attnrt_attention_desc& d, bool backward) {
  return backward && d.has_sinks ? static_cast<size_t>(d.batch) * d.heads_q : 0;
}

namespace {

// Loads rows [0, n) of head h of sequence b from t into dst [n, dim] as float.
void load_rows(const kernels::RowTensor& t, attnrt_dtype dtype, int64_t b, int64_t h, int64_t n, int64_t dim,
               float* dst) {
  for (int64_t j = 0; j < n; ++j) kernels::load_row(t.row(b, j, h), dtype, dst + j * dim, dim);
}

}  // namespace

void forward(const kernels::ForwardProblem& p, float* workspace, int num_threads) {
  const auto& d = p.desc;
  const int64_t hd = d.head_dim, hv = d.head_dim_v, group = p.group();
  const size_t per_thread = workspace_floats_per_thread(d, false);
  const int64_t items = static_cast<int64_t>(d.batch) * d.heads_kv;

#pragma omp parallel for num_threads(num_threads) schedule(dynamic, 1)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t b = item / d.heads_kv, hk = item % d.heads_kv;
    const int64_t q_len = p.lengths.q_len(b), k_len = p.lengths.k_len(b);
    float* ws = workspace + static_cast<size_t>(kernels::omp_thread()) * per_thread;
    float* scores = ws;                                                // [q_len, k_len]
    float* k = scores + static_cast<size_t>(d.seqlen_q) * d.seqlen_k;  // [k_len, hd]
    float* v = k + static_cast<size_t>(d.seqlen_k) * hd;               // [k_len, hv]
    float* q = v + static_cast<size_t>(d.seqlen_k) * hv;               // [hd]
    float* o = q + hd;                                                 // [hv]
    load_rows(p.k, d.dtype, b, hk, k_len, hd, k);
    load_rows(p.v, d.dtype, b, hk, k_len, hv, v);

    for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
      const float slope = kernels::alibi_slope(p.alibi, b, h);
      const float sink = p.sinks ? p.sinks[h] : kNegInf;
      for (int64_t i = 0; i < q_len; ++i) {
        kernels::load_row(p.q.row(b, i, h), d.dtype, q, hd);
        const kernels::KeyRange r = p.keys(b, i);
        float* s = scores + i * k_len;
        // 1. scores, with masked keys at -inf; flex_attention's mods and block mask on top
        for (int64_t j = 0; j < k_len; ++j) {
          s[j] = (j >= r.lo && j < r.hi)
                     ? score(dot(q, k + j * hd, hd), d.softmax_scale, d.softcap, slope, i, j, p.diag_offset(b)).value
                     : kNegInf;
          if (p.flex && s[j] != kNegInf) s[j] = p.flex->apply(s[j], b, h, i, j);
        }
        // 2. softmax with the sink logit in the denominator only
        float m = sink;
        for (int64_t j = 0; j < k_len; ++j) m = std::max(m, s[j]);
        float denominator = 0.0f;
        if (m != kNegInf) {
          for (int64_t j = 0; j < k_len; ++j) denominator += (s[j] = std::exp(s[j] - m));
          if (p.sinks) denominator += std::exp(sink - m);
        }
        // 3. out = P v; a row that sees nothing gives 0 and lse -inf (or the sink)
        std::fill(o, o + hv, 0.0f);
        if (denominator > 0.0f) {
          for (int64_t j = 0; j < k_len; ++j) {
            const float pj = s[j] / denominator;
            for (int64_t c = 0; c < hv; ++c) o[c] += pj * v[j * hv + c];
          }
        }
        kernels::store_row(o, 1.0f, d.dtype, p.out.row(b, i, h), hv);
        if (p.lse) p.lse.at(b, h, i) = denominator > 0.0f ? m + std::log(denominator) : kNegInf;
      }
    }
  }
}

}  // namespace attnrt::plugins::eager
