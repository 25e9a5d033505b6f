// fp64 attention straight from the definition in plugin_abi.h: one query row at a time, every
// score materialized, no tiling and nothing shared with the plugins' kernels.
#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/harness/reference.hpp>
#include <attnrt/runtime/error.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnrt {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Logical indexing of one call's tensors, whatever their layout.
struct Layout {
  const attnrt_attention_desc& d;
  const attnrt_forward_args& a;
  const ReferenceMods* mods;

  int64_t cu(const DLTensor* t, int64_t b) const { return static_cast<int64_t>(read_element(*t, b)); }
  int64_t q_len(int64_t b) const {
    return d.is_varlen ? cu(a.cu_seqlens_q, b + 1) - cu(a.cu_seqlens_q, b) : d.seqlen_q;
  }
  int64_t k_len(int64_t b) const {
    if ((d.is_varlen || d.is_paged) && a.seqused_k) return cu(a.seqused_k, b);
    return d.is_varlen ? cu(a.cu_seqlens_k, b + 1) - cu(a.cu_seqlens_k, b) : d.seqlen_k;
  }
  // Flat row-major index of element (b, t, h, c) of a q-like tensor with `heads` and `dim`.
  int64_t q_index(int64_t b, int64_t t, int64_t h, int64_t c, int64_t heads, int64_t dim) const {
    const int64_t row = d.is_varlen ? cu(a.cu_seqlens_q, b) + t : b * d.seqlen_q + t;
    return (row * heads + h) * dim + c;
  }
  int64_t kv_index(int64_t b, int64_t t, int64_t h, int64_t c, int64_t dim) const {
    int64_t row;
    if (d.is_varlen && !d.is_paged) {
      row = cu(a.cu_seqlens_k, b) + t;
    } else if (d.is_paged) {
      const int64_t pages_per_seq = a.block_table->shape[1];
      const int64_t page = static_cast<int64_t>(read_element(*a.block_table, b * pages_per_seq + t / d.page_size));
      row = page * d.page_size + t % d.page_size;
    } else {
      row = b * d.seqlen_k + t;
    }
    return (row * d.heads_kv + h) * dim + c;
  }
  int64_t lse_index(int64_t b, int64_t h, int64_t i) const {
    if (d.is_varlen) return h * a.q->shape[0] + cu(a.cu_seqlens_q, b) + i;
    return (b * d.heads_q + h) * d.seqlen_q + i;
  }
  double slope(int64_t b, int64_t h) const {
    if (!d.has_alibi) return 0.0;
    return a.alibi_slopes->ndim == 2 ? read_element(*a.alibi_slopes, b * d.heads_q + h)
                                     : read_element(*a.alibi_slopes, h);
  }
  bool visible(int64_t i, int64_t j, int64_t ql, int64_t kl) const {
    const int64_t diag = i + kl - ql;  // bottom-right alignment
    const int64_t right = d.causal ? 0 : d.window_right;
    if (right >= 0 && j > diag + right) return false;
    if (d.window_left >= 0 && j < diag - d.window_left) return false;
    return true;
  }
};

// Scores of one query row: raw (scaled) value, softcapped value, the descriptor's score (before
// flex mods), final score; -inf if masked.
struct RowScores {
  std::vector<double> capped, plain, score;
  double sink = -kInf;
  double m = -kInf, z = 0.0;  // max and denominator (sink included)
  std::vector<double> p;      // probabilities of the keys
  double p_sink = 0.0;
};

RowScores row_scores(const Layout& L, int64_t b, int64_t h, int64_t i) {
  const auto& d = L.d;
  const int64_t ql = L.q_len(b), kl = L.k_len(b), hk = h / (d.heads_q / d.heads_kv);
  RowScores r;
  r.capped.assign(kl, 0.0);
  r.plain.assign(kl, -kInf);
  r.score.assign(kl, -kInf);
  if (d.has_sinks) r.sink = read_element(*L.a.sinks, h);
  const double slope = L.slope(b, h);
  for (int64_t j = 0; j < kl; ++j) {
    if (!L.visible(i, j, ql, kl)) continue;
    double dot = 0.0;
    for (int64_t c = 0; c < d.head_dim; ++c) {
      dot += read_element(*L.a.q, L.q_index(b, i, h, c, d.heads_q, d.head_dim)) *
             read_element(*L.a.k, L.kv_index(b, j, hk, c, d.head_dim));
    }
    double s = static_cast<double>(d.softmax_scale) * dot;
    if (d.softcap > 0.0f) s = d.softcap * std::tanh(s / d.softcap);
    r.capped[j] = s;
    r.plain[j] = r.score[j] = s - slope * std::fabs(static_cast<double>(i + kl - ql - j));
    if (const ReferenceMods* m = L.mods) {
      if (m->visible && !m->visible(b, h, i, j)) {
        r.score[j] = -kInf;
      } else if (m->score) {
        r.score[j] = m->score(r.plain[j], b, h, i, j);
      }
    }
  }
  r.m = r.sink;
  for (double s : r.score) r.m = std::max(r.m, s);
  r.p.assign(kl, 0.0);
  if (r.m == -kInf) return r;
  for (int64_t j = 0; j < kl; ++j) r.z += std::exp(r.score[j] - r.m);
  if (d.has_sinks) r.z += std::exp(r.sink - r.m);
  for (int64_t j = 0; j < kl; ++j) r.p[j] = std::exp(r.score[j] - r.m) / r.z;
  if (d.has_sinks) r.p_sink = std::exp(r.sink - r.m) / r.z;
  return r;
}

// desc.device names where the checked call runs; the reference reads host copies of its inputs.
void refuse_unsupported(const attnrt_attention_desc& d, const attnrt_forward_args& a) {
  if (d.dropout_p > 0.0f) throw Error("reference: dropout has no deterministic reference");
  for (const DLTensor* t :
       {a.q, a.k, a.v, a.sinks, a.alibi_slopes, a.cu_seqlens_q, a.cu_seqlens_k, a.seqused_k, a.block_table}) {
    if (t && t->device.device_type != kDLCPU) throw Error("reference: tensors must be on the CPU");
  }
}

}  // namespace

ReferenceForward reference_forward(const attnrt_attention_desc& d, const attnrt_forward_args& a,
                                   const ReferenceMods* mods) {
  refuse_unsupported(d, a);
  const Layout L{d, a, mods};
  ReferenceForward r;
  r.out.assign(numel_of(*a.out), 0.0);
  const int64_t total_q = d.is_varlen ? a.q->shape[0] : static_cast<int64_t>(d.batch) * d.seqlen_q;
  r.lse.assign(static_cast<size_t>(total_q) * d.heads_q, -kInf);
  const int64_t group = d.heads_q / d.heads_kv;
  // (sequence, head) pairs in parallel: each writes its own rows of out and lse, in the same
  // order as a serial loop, so the result does not depend on the thread count.
  const int64_t pairs = int64_t(d.batch) * d.heads_q;
#pragma omp parallel for schedule(dynamic)
  for (int64_t bh = 0; bh < pairs; ++bh) {
    const int64_t b = bh / d.heads_q, h = bh % d.heads_q;
    for (int64_t i = 0; i < L.q_len(b); ++i) {
      const RowScores s = row_scores(L, b, h, i);
      r.lse[L.lse_index(b, h, i)] = s.m == -kInf ? -kInf : s.m + std::log(s.z);
      for (int64_t j = 0; j < static_cast<int64_t>(s.p.size()); ++j) {
        if (s.p[j] == 0.0) continue;
        for (int64_t c = 0; c < d.head_dim_v; ++c) {
          r.out[L.q_index(b, i, h, c, d.heads_q, d.head_dim_v)] +=
              s.p[j] * read_element(*a.v, L.kv_index(b, j, h / group, c, d.head_dim_v));
        }
      }
    }
  }
  return r;
}

ReferenceBackward reference_backward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const DLTensor& dout,
                                     const ReferenceMods* mods) {
  refuse_unsupported(d, a);
  const Layout L{d, a, mods};
  ReferenceBackward g;
  g.dq.assign(numel_of(*a.q), 0.0);
  g.dk.assign(numel_of(*a.k), 0.0);
  g.dv.assign(numel_of(*a.v), 0.0);
  if (d.has_sinks) g.dsinks.assign(d.heads_q, 0.0);
  const int64_t group = d.heads_q / d.heads_kv;
  const double scale = d.softmax_scale;
  // (sequence, kv head) pairs in parallel: each owns its rows of dk and dv and the dq rows of its
  // query heads, accumulated in the serial order; dsinks sums per (sequence, head), then over
  // sequences in order, so the result does not depend on the thread count.
  std::vector<double> dsinks_part(d.has_sinks ? size_t(d.batch) * d.heads_q : 0, 0.0);
  // Paged sequences may share pages (and so rows of dk, dv): those run serially.
  const int64_t pairs = int64_t(d.batch) * d.heads_kv;
  const bool shared_rows = a.block_table != nullptr;
#pragma omp parallel for schedule(dynamic) if (!shared_rows)
  for (int64_t bk = 0; bk < pairs; ++bk) {
    const int64_t b = bk / d.heads_kv, hk = bk % d.heads_kv;
    for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
      for (int64_t i = 0; i < L.q_len(b); ++i) {
        const RowScores s = row_scores(L, b, h, i);
        const int64_t kl = static_cast<int64_t>(s.p.size());
        std::vector<double> g_out(d.head_dim_v), dp(kl, 0.0);
        for (int64_t c = 0; c < d.head_dim_v; ++c)
          g_out[c] = read_element(dout, L.q_index(b, i, h, c, d.heads_q, d.head_dim_v));
        double D = 0.0;  // sum_j p_j dp_j = dout . out
        for (int64_t j = 0; j < kl; ++j) {
          if (s.p[j] == 0.0) continue;
          for (int64_t c = 0; c < d.head_dim_v; ++c) {
            const int64_t vi = L.kv_index(b, j, hk, c, d.head_dim_v);
            dp[j] += g_out[c] * read_element(*a.v, vi);
            g.dv[vi] += s.p[j] * g_out[c];
          }
          D += s.p[j] * dp[j];
        }
        if (d.has_sinks) dsinks_part[size_t(b * d.heads_q + h)] -= s.p_sink * D;
        for (int64_t j = 0; j < kl; ++j) {
          if (s.p[j] == 0.0) continue;
          double dx = s.p[j] * (dp[j] - D);
          if (mods && mods->grad) dx *= mods->grad(s.plain[j], b, h, i, j);
          if (d.softcap > 0.0f) dx *= 1.0 - std::pow(s.capped[j] / d.softcap, 2);
          dx *= scale;
          for (int64_t c = 0; c < d.head_dim; ++c) {
            const int64_t qi = L.q_index(b, i, h, c, d.heads_q, d.head_dim);
            const int64_t ki = L.kv_index(b, j, hk, c, d.head_dim);
            g.dq[qi] += dx * read_element(*a.k, ki);
            g.dk[ki] += dx * read_element(*a.q, qi);
          }
        }
      }
    }
  }
  for (int64_t b = 0; b < d.batch && d.has_sinks; ++b) {
    for (int64_t h = 0; h < d.heads_q; ++h) g.dsinks[size_t(h)] += dsinks_part[size_t(b * d.heads_q + h)];
  }
  return g;
}

double max_abs_error(const DLTensor& t, const std::vector<double>& ref) {
  double worst = 0.0;
  for (int64_t i = 0; i < static_cast<int64_t>(ref.size()); ++i) {
    const double e = std::fabs(read_element(t, i) - ref[i]);
    if (std::isnan(e)) {
      if (!(std::isinf(ref[i]) && read_element(t, i) == ref[i])) return std::numeric_limits<double>::quiet_NaN();
      continue;  // -inf == -inf (LSE of an empty row)
    }
    worst = std::max(worst, e);
  }
  return worst;
}

double max_abs_error(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double e = std::fabs(a[i] - b[i]);
    if (std::isnan(e)) return e;
    worst = std::max(worst, e);
  }
  return worst;
}

double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

}  // namespace attnrt
