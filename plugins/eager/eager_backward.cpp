// Backward of eager attention with p recomputed from the forward's LSE (FlashAttention-2,
// Algorithm 2, without tiling):
//   p_ij = exp(s_ij - lse_i)           D_i = dout_i . out_i
//   dv_j += sum_i p_ij dout_i          dp_ij = dout_i . v_j
//   ds_ij = p_ij (dp_ij - D_i)         dx_ij = ds_ij * (1 - (capped_ij / softcap)^2)   [softcap]
//   flex_attention: s_ij = score_mod(x_ij), so ds_ij takes score_mod_grad(x_ij) first
//   dq_i = scale sum_j dx_ij k_j       dk_j += scale sum_i dx_ij q_i
//   dsink_h = -sum_i exp(sink_h - lse_i) D_i
#include "eager_kernels.hpp"

#include <attnrt_kernels/flex/eval.hpp>

#include <algorithm>
#include <cmath>

namespace attnrt::plugins::eager {

using kernels::kNegInf;

void backward(const kernels::BackwardProblem& p, float* workspace, int num_threads) {
  const auto& d = p.desc;
  const int64_t hd = d.head_dim, hv = d.head_dim_v, group = p.group();
  const size_t per_thread = workspace_floats_per_thread(d, true);
  float* dsink_partial = workspace + per_thread * static_cast<size_t>(num_threads);  // [batch, heads_q]
  const int64_t items = static_cast<int64_t>(d.batch) * d.heads_kv;

  // One item owns dk/dv of (b, hk) and dq of its group's heads: no two threads write one row.
#pragma omp parallel for num_threads(num_threads) schedule(dynamic, 1)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t b = item / d.heads_kv, hk = item % d.heads_kv;
    const int64_t q_len = p.lengths.q_len(b), k_len = p.lengths.k_len(b);
    float* ws = workspace + static_cast<size_t>(kernels::omp_thread()) * per_thread;
    float* k = ws;                                            // [k_len, hd]
    float* v = k + static_cast<size_t>(d.seqlen_k) * hd;      // [k_len, hv]
    float* q = v + static_cast<size_t>(d.seqlen_k) * hv;      // [hd]
    float* o = q + hd;                                        // [hv] out row
    float* dk = o + hv;                                       // [k_len, hd]
    float* dv = dk + static_cast<size_t>(d.seqlen_k) * hd;    // [k_len, hv]
    float* dout = dv + static_cast<size_t>(d.seqlen_k) * hv;  // [hv]
    float* dq = dout + hv;                                    // [hd]
    for (int64_t j = 0; j < k_len; ++j) {
      kernels::load_row(p.k.row(b, j, hk), d.dtype, k + j * hd, hd);
      kernels::load_row(p.v.row(b, j, hk), d.dtype, v + j * hv, hv);
    }
    std::fill(dk, dk + k_len * hd, 0.0f);
    std::fill(dv, dv + k_len * hv, 0.0f);

    for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
      const float slope = kernels::alibi_slope(p.alibi, b, h);
      float dsink = 0.0f;
      for (int64_t i = 0; i < q_len; ++i) {
        kernels::load_row(p.q.row(b, i, h), d.dtype, q, hd);
        kernels::load_row(p.out.row(b, i, h), d.dtype, o, hv);
        kernels::load_row(p.dout.row(b, i, h), d.dtype, dout, hv);
        const float lse = p.lse.at(b, h, i);
        const float D = dot(dout, o, hv);
        if (p.sinks && lse != kNegInf) dsink -= std::exp(p.sinks[h] - lse) * D;
        const kernels::KeyRange r = p.keys(b, i);
        std::fill(dq, dq + hd, 0.0f);
        for (int64_t j = 0; j < k_len; ++j) {
          if (j < r.lo || j >= r.hi || lse == kNegInf) continue;  // p_ij = 0: no gradient
          const Score s = score(dot(q, k + j * hd, hd), d.softmax_scale, d.softcap, slope, i, j, p.diag_offset(b));
          const float value = p.flex ? p.flex->apply(s.value, b, h, i, j) : s.value;
          if (value == kNegInf) continue;
          const float pij = std::exp(value - lse);
          for (int64_t c = 0; c < hv; ++c) dv[j * hv + c] += pij * dout[c];
          float ds = pij * (dot(dout, v + j * hv, hv) - D);
          if (p.flex) ds *= p.flex->grad(s.value, b, h, i, j);
          if (d.softcap > 0.0f) ds *= 1.0f - (s.capped / d.softcap) * (s.capped / d.softcap);
          ds *= d.softmax_scale;
          for (int64_t c = 0; c < hd; ++c) {
            dq[c] += ds * k[j * hd + c];
            dk[j * hd + c] += ds * q[c];
          }
        }
        kernels::store_row(dq, 1.0f, d.dtype, p.dq.row(b, i, h), hd);
      }
      if (p.dsinks) dsink_partial[b * d.heads_q + h] = dsink;
    }
    for (int64_t j = 0; j < k_len; ++j) {
      kernels::store_row(dk + j * hd, 1.0f, d.dtype, p.dk.row(b, j, hk), hd);
      kernels::store_row(dv + j * hv, 1.0f, d.dtype, p.dv.row(b, j, hk), hv);
    }
  }
  if (p.dsinks) kernels::reduce_sink_gradient(dsink_partial, d.batch, d.heads_q, p.dsinks);
}

}  // namespace attnrt::plugins::eager
