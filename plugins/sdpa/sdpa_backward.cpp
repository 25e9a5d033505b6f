// Backward: FlashAttention-2, Algorithm 2, split into passes that never write the same row
// from two threads, so the result is deterministic without atomics:
//   pass 0, per (sequence, head):            D_i = dout_i . out_i, dsinks partial sums, and
//                                            q (scaled) and dout packed once as fp32 rows;
//            per (sequence, kv head, k block): k^T, k and v^T packed once
//   pass 1, per (sequence, kv head, k block): dk, dv summed over every query that sees the block
//   pass 2, per (sequence, head, q block):    dq summed over the key blocks the queries see
// p is recomputed from q, k and the forward's LSE; ds = p (dp - D) carries softcap's chain rule.
#include "sdpa_gemm.hpp"
#include "sdpa_kernels.hpp"

#include <attnrt_kernels/threads.hpp>
#include <attnrt_kernels/tile.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace attnrt::plugins::sdpa {

using namespace attnrt::kernels;

namespace {

struct Buffers {
  float *p, *dp, *capped, *dk, *dv, *dq;
};

Buffers carve(float* base, const Tiles& t) {
  Buffers w{};
  w.p = base;
  w.dp = w.p + t.bwd_q * t.bwd_k;
  w.capped = w.dp + t.bwd_q * t.bwd_k;
  w.dk = w.capped + t.bwd_q * t.bwd_k;
  w.dv = w.dk + t.bwd_k * t.hd_pad;
  w.dq = w.dv + t.bwd_k * t.hv_pad;
  return w;
}

// Row index of (b, i) among all packed query rows: cu_seqlens offsets when varlen.
int64_t packed_row(const BackwardProblem& p, int64_t b, int64_t i) {
  return p.lengths.cu_q ? p.lengths.cu_q[b] + i : b * p.desc.seqlen_q + i;
}

// For a [nq, block_k] tile whose raw scores q.k are in w.p: p = exp(score - lse) in w.p,
// ds = p (dp - D) * d(score)/d(raw) in w.dp (dp = dout . v^T must already be in w.dp).
void probabilities_and_ds(const BackwardProblem& p, const Tiles& t, const Buffers& w, const TileRow* rows,
                          const float* lse, const float* D, int64_t nq, int64_t b, int64_t k0, int64_t nk) {
  const float softcap = p.desc.softcap;
  const int64_t bk = t.bwd_k;
  transform_scores(w.p, bk, bk, rows, nq, k0, nk, softcap, p.diag_offset(b), softcap > 0.0f ? w.capped : nullptr);
  for (int64_t r = 0; r < nq; ++r) {
    float* pr = w.p + r * bk;
    float* dsr = w.dp + r * bk;
    const float lr = lse[r];
    if (lr == kNegInf) {  // the row saw nothing in forward: no gradient flows through it
      std::fill(pr, pr + bk, 0.0f);
      std::fill(dsr, dsr + bk, 0.0f);
      continue;
    }
    const vec8f dr = splat8(D[r]);
    for (int64_t j = 0; j < bk; j += 8) {
      const vec8f pv = exp8(load8(pr + j) - lr);
      store8(pr + j, pv);
      vec8f ds = pv * (load8(dsr + j) - dr);
      if (softcap > 0.0f) {
        const vec8f c = load8(w.capped + r * bk + j) * (1.0f / softcap);
        ds *= 1.0f - c * c;
      }
      store8(dsr + j, ds);
    }
  }
}

}  // namespace

void backward(const BackwardProblem& p, float* workspace, int num_threads) {
  const attnrt_attention_desc& d = p.desc;
  const Tiles t = tiles_for(d);
  const int64_t hd = d.head_dim, hv = d.head_dim_v, group = p.group(), bk = t.bwd_k, bq = t.bwd_q;
  const int64_t total_q = p.lengths.cu_q ? p.lengths.cu_q[d.batch] : static_cast<int64_t>(d.batch) * d.seqlen_q;
  const size_t per_thread = backward_floats_per_thread(d);
  float* D = workspace + per_thread * static_cast<size_t>(num_threads);             // [heads_q, total_q]
  float* q_rows = D + static_cast<size_t>(d.heads_q) * total_q;                     // [heads_q, total_q, hd_pad]
  float* dout_rows = q_rows + static_cast<size_t>(d.heads_q) * total_q * t.hd_pad;  // [.., hv_pad]
  float* kv_tiles = dout_rows + static_cast<size_t>(d.heads_q) * total_q * t.hv_pad;
  const int64_t tiles_per_seq = (d.seqlen_k + bk - 1) / bk;
  const int64_t tile_floats = static_cast<int64_t>(backward_tile_floats(d));
  float* dsink_partial =
      kv_tiles + static_cast<size_t>(d.batch) * tiles_per_seq * d.heads_kv * tile_floats;  // [batch, heads_q]
  const int64_t batch_heads = static_cast<int64_t>(d.batch) * d.heads_q;
  // Packed operands of query rows (b, i..) of head h, and of key tile (b, hk, kb).
  auto q_at = [&](int64_t b, int64_t h, int64_t i) { return q_rows + (h * total_q + packed_row(p, b, i)) * t.hd_pad; };
  auto dout_at = [&](int64_t b, int64_t h, int64_t i) {
    return dout_rows + (h * total_q + packed_row(p, b, i)) * t.hv_pad;
  };
  auto tile_at = [&](int64_t b, int64_t hk, int64_t kb) {
    return kv_tiles + ((b * d.heads_kv + hk) * tiles_per_seq + kb) * tile_floats;
  };

  // Pass 0: D and the sink gradient dsink_h = -sum_i exp(sink_h - lse_i) D_i.
#pragma omp parallel for num_threads(num_threads) schedule(static)
  for (int64_t bh = 0; bh < batch_heads; ++bh) {
    const int64_t b = bh / d.heads_q, h = bh % d.heads_q;
    float o[kMaxTileHeadDim], g[kMaxTileHeadDim];
    float dsink = 0.0f;
    for (int64_t i = 0; i < p.lengths.q_len(b); ++i) {
      load_row(p.out.row(b, i, h), d.dtype, o, hv);
      load_row(p.dout.row(b, i, h), d.dtype, g, hv);
      float sum = 0.0f;
      for (int64_t c = 0; c < hv; ++c) sum += o[c] * g[c];
      D[h * total_q + packed_row(p, b, i)] = sum;
      const float lse = p.lse.at(b, h, i);
      if (p.sinks && lse != kNegInf) dsink -= std::exp(p.sinks[h] - lse) * sum;
    }
    dsink_partial[bh] = dsink;
    const int64_t q_len = p.lengths.q_len(b);
    if (q_len > 0) {
      pack_rows(p.q, d.dtype, b, h, 0, q_len, hd, d.softmax_scale, q_at(b, h, 0), t.hd_pad);
      pack_rows(p.dout, d.dtype, b, h, 0, q_len, hv, 1.0f, dout_at(b, h, 0), t.hv_pad);
    }
  }
  const int64_t pack_items = static_cast<int64_t>(d.batch) * d.heads_kv * tiles_per_seq;
#pragma omp parallel for num_threads(num_threads) schedule(static)
  for (int64_t item = 0; item < pack_items; ++item) {
    const int64_t kb = item % tiles_per_seq, hk = (item / tiles_per_seq) % d.heads_kv,
                  b = item / tiles_per_seq / d.heads_kv;
    const int64_t k0 = kb * bk, nk = std::min(bk, p.lengths.k_len(b) - k0);
    if (nk <= 0) continue;
    float* tile = tile_at(b, hk, kb);
    pack_rows_transposed(p.k, d.dtype, b, hk, k0, nk, hd, tile, bk);                            // k^T [hd, bk]
    pack_rows(p.k, d.dtype, b, hk, k0, nk, hd, 1.0f, tile + hd * bk, t.hd_pad);                 // k [bk, hd_pad]
    pack_rows_transposed(p.v, d.dtype, b, hk, k0, nk, hv, tile + hd * bk + bk * t.hd_pad, bk);  // v^T [hv, bk]
  }

  TileGemm gemm;
  // Pass 1: dk and dv of one key block, over every query head of its group and every query
  // block whose visible keys meet it.
  std::vector<std::pair<int32_t, int32_t>> k_blocks;  // (b, block)
  for (int32_t b = 0; b < d.batch; ++b) {
    for (int64_t k0 = 0; k0 < p.lengths.k_len(b); k0 += bk) k_blocks.push_back({b, static_cast<int32_t>(k0 / bk)});
  }
  const int64_t kv_items = static_cast<int64_t>(k_blocks.size()) * d.heads_kv;
#pragma omp parallel for num_threads(num_threads) schedule(dynamic, 1)
  for (int64_t item = 0; item < kv_items; ++item) {
    const auto [bb, kb] = k_blocks[item / d.heads_kv];
    const int64_t b = bb, hk = item % d.heads_kv, k0 = static_cast<int64_t>(kb) * bk;
    const int64_t q_len = p.lengths.q_len(b), nk = std::min(bk, p.lengths.k_len(b) - k0);
    const Buffers w = carve(workspace + static_cast<size_t>(omp_thread()) * per_thread, t);
    const float* kt = tile_at(b, hk, kb);
    const float* vt = kt + hd * bk + bk * t.hd_pad;
    std::fill(w.dk, w.dk + bk * t.hd_pad, 0.0f);
    std::fill(w.dv, w.dv + bk * t.hv_pad, 0.0f);
    std::vector<TileRow> rows(bq);
    float lse[64], Drow[64];
    for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
      const float slope = alibi_slope(p.alibi, b, h);
      for (int64_t q0 = 0; q0 < q_len; q0 += bq) {
        const int64_t nq = std::min(bq, q_len - q0);
        bool any = false;
        for (int64_t r = 0; r < nq; ++r) {
          const KeyRange range = p.keys(b, q0 + r);
          rows[r] = {q0 + r, range.lo, range.hi, slope};
          any |= range.lo < std::min(range.hi, k0 + nk) && range.hi > k0 && range.lo < k0 + nk;
          lse[r] = p.lse.at(b, h, q0 + r);
          Drow[r] = D[h * total_q + packed_row(p, b, q0 + r)];
        }
        if (!any) continue;
        const float* q = q_at(b, h, q0);
        const float* dout = dout_at(b, h, q0);
        gemm(w.p, bk, q, t.hd_pad, 1, kt, bk, nq, bk, hd, false);      // s = q k^T
        gemm(w.dp, bk, dout, t.hv_pad, 1, vt, bk, nq, bk, hv, false);  // dp = dout v^T
        probabilities_and_ds(p, t, w, rows.data(), lse, Drow, nq, b, k0, nk);
        gemm(w.dv, t.hv_pad, w.p, 1, bk, dout, t.hv_pad, nk, t.hv_pad, nq, true);  // dv += p^T dout
        gemm(w.dk, t.hd_pad, w.dp, 1, bk, q, t.hd_pad, nk, t.hd_pad, nq, true);    // dk += ds^T q
      }
    }
    // q was pre-scaled by softmax_scale, so dk already carries the scale.
    for (int64_t j = 0; j < nk; ++j) {
      store_row(w.dk + j * t.hd_pad, 1.0f, d.dtype, p.dk.row(b, k0 + j, hk), hd);
      store_row(w.dv + j * t.hv_pad, 1.0f, d.dtype, p.dv.row(b, k0 + j, hk), hv);
    }
  }

  // Pass 2: dq of one query block of one head, over the key blocks it sees.
  std::vector<std::pair<int32_t, int32_t>> q_blocks;
  for (int32_t b = 0; b < d.batch; ++b) {
    for (int64_t q0 = 0; q0 < p.lengths.q_len(b); q0 += bq) q_blocks.push_back({b, static_cast<int32_t>(q0 / bq)});
  }
  const int64_t q_items = static_cast<int64_t>(q_blocks.size()) * d.heads_q;
#pragma omp parallel for num_threads(num_threads) schedule(dynamic, 1)
  for (int64_t item = 0; item < q_items; ++item) {
    const auto [bb, qb] = q_blocks[item / d.heads_q];
    const int64_t b = bb, h = item % d.heads_q, hk = h / group, q0 = static_cast<int64_t>(qb) * bq;
    const int64_t nq = std::min(bq, p.lengths.q_len(b) - q0);
    const Buffers w = carve(workspace + static_cast<size_t>(omp_thread()) * per_thread, t);
    const float slope = alibi_slope(p.alibi, b, h);
    std::vector<TileRow> rows(nq);
    float lse[64], Drow[64];
    int64_t k_lo = p.lengths.k_len(b), k_hi = 0;
    for (int64_t r = 0; r < nq; ++r) {
      const KeyRange range = p.keys(b, q0 + r);
      rows[r] = {q0 + r, range.lo, range.hi, slope};
      if (range.lo < range.hi) {
        k_lo = std::min(k_lo, range.lo);
        k_hi = std::max(k_hi, range.hi);
      }
      lse[r] = p.lse.at(b, h, q0 + r);
      Drow[r] = D[h * total_q + packed_row(p, b, q0 + r)];
    }
    const float* q = nq > 0 ? q_at(b, h, q0) : nullptr;
    const float* dout = nq > 0 ? dout_at(b, h, q0) : nullptr;
    std::fill(w.dq, w.dq + nq * t.hd_pad, 0.0f);
    // Whole packed tiles from the one holding k_lo; the mask covers what lies outside.
    for (int64_t k0 = k_lo / bk * bk; k0 < k_hi; k0 += bk) {
      const int64_t nk = std::min(bk, p.lengths.k_len(b) - k0);
      const float* kt = tile_at(b, hk, k0 / bk);
      const float* k = kt + hd * bk;
      const float* vt = k + bk * t.hd_pad;
      gemm(w.p, bk, q, t.hd_pad, 1, kt, bk, nq, bk, hd, false);
      gemm(w.dp, bk, dout, t.hv_pad, 1, vt, bk, nq, bk, hv, false);
      probabilities_and_ds(p, t, w, rows.data(), lse, Drow, nq, b, k0, nk);
      gemm(w.dq, t.hd_pad, w.dp, bk, 1, k, t.hd_pad, nq, t.hd_pad, nk, true);  // dq += ds k
    }
    // ds is the gradient of the scaled score, so dq = softmax_scale * ds k.
    for (int64_t r = 0; r < nq; ++r) {
      store_row(w.dq + r * t.hd_pad, d.softmax_scale, d.dtype, p.dq.row(b, q0 + r, h), hd);
    }
  }

  gemm.check();
  if (p.dsinks) kernels::reduce_sink_gradient(dsink_partial, d.batch, d.heads_q, p.dsinks);
}

}  // namespace attnrt::plugins::sdpa
