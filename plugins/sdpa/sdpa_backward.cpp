// Backward: FlashAttention-2, Algorithm 2, split into passes that never write the same row
// from two threads, so the result is deterministic without atomics:
//   pass 0, per (sequence, head):            D_i = dout_i . out_i, dsinks partial sums, and
//                                            q and dout packed once as rows;
//            per (sequence, kv head, k block): the key tile's operands packed once
//   pass 1, per (sequence, kv head, k block): dk, dv summed over every query that sees the block
//   pass 2, per (sequence, head, q block):    dq summed over the key blocks the queries see
// or, where there are two (sequence, kv head) pairs a thread and the call is not deterministic
// (backward_per_head), passes 1 and 2 as one per pair: its thread walks the key blocks, and adds
// each (query block, key block)'s ds k to dq rows it owns, so s and dp are computed once
// (five products a pair of blocks instead of seven).
// p is recomputed from q, k and the forward's LSE; ds = p (dp - D) carries softcap's chain rule.
//
// Two operand formats, as in the forward: fp32 (q pre-scaled; k^T, k and v^T per key tile) for
// every dtype, and bf16 (q, dout, k and v as given; p and ds rounded to bf16 before their
// products, as FlashAttention-2 on GPUs does) where the inputs are bf16 and oneDNN has bf16
// kernels for the CPU. The bf16 products always have the full [bwd_q, bwd_k] shape (one oneDNN
// primitive each): rows past a block's queries have p = ds = 0 and keys past a sequence are zero.
#include "onednn_library.hpp"
#include "online_softmax.hpp"
#include "sdpa_gemm.hpp"
#include "sdpa_kernels.hpp"

#include <attnrt_kernels/threads.hpp>
#include <attnrt_kernels/tile.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace attnrt::plugins::sdpa {

using namespace attnrt::kernels;

namespace {

struct Buffers {
  float *p, *dp, *capped, *dk, *dv, *dq;
  uint16_t *p16, *p16_lo, *ds16, *ds16_lo;  // bf16 format: p and ds, each the sum of two bf16 parts
};

Buffers carve(float* base, const Tiles& t) {
  Buffers w{};
  w.p = base;
  w.dp = w.p + t.bwd_q * t.bwd_k;
  w.capped = w.dp + t.bwd_q * t.bwd_k;
  w.dk = w.capped + t.bwd_q * t.bwd_k;
  w.dv = w.dk + t.bwd_k * t.hd_pad;
  w.dq = w.dv + t.bwd_k * t.hv_pad;
  w.p16 = reinterpret_cast<uint16_t*>(w.dq + t.bwd_q * t.hd_pad);
  w.p16_lo = w.p16 + t.bwd_q * t.bwd_k;
  w.ds16 = w.p16_lo + t.bwd_q * t.bwd_k;
  w.ds16_lo = w.ds16 + t.bwd_q * t.bwd_k;
  return w;
}

// Row index of (b, i) among all packed query rows: cu_seqlens offsets when varlen.
int64_t packed_row(const BackwardProblem& p, int64_t b, int64_t i) {
  return p.lengths.cu_q ? p.lengths.cu_q[b] + i : b * p.desc.seqlen_q + i;
}

// For a [nq, block_k] tile whose scores are in w.p (scaled: softmax_scale * q.k): p =
// exp(score - lse) in w.p, ds = p (dp - D) * d(score)/d(raw) in w.dp (dp = dout . v^T must
// already be in w.dp).
void p_and_ds_of_tile(const BackwardProblem& p, const Tiles& t, const Buffers& w, const TileRow* rows, const float* lse,
                      const float* D, int64_t nq, int64_t b, int64_t k0, int64_t nk) {
  const float softcap = p.desc.softcap;
  const int64_t bk = t.bwd_k;
  transform_scores(w.p, bk, bk, rows, nq, k0, nk, softcap, p.diag_offset(b), softcap > 0.0f ? w.capped : nullptr);
  if (softcap <= 0.0f) {  // the common case, on the CPU's widest vector unit
    static const ProbabilitiesAndDsFn wide = probabilities_and_ds();
    wide(w.p, w.dp, lse, D, nq, bk, bk);
    return;
  }
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

// fp32 operands. Packed rows: q * softmax_scale [hd_pad], dout [hv_pad]; key tile: k^T
// [hd, bk], k [bk, hd_pad], v^T [hv, bk].
struct Fp32Format {
  const BackwardProblem& p;
  const Tiles& t;
  TileGemm gemm;

  using Row = float;
  int64_t q_ld() const { return t.hd_pad; }
  int64_t dout_ld() const { return t.hv_pad; }
  float dk_scale() const { return 1.0f; }  // q was pre-scaled, so dk already carries the scale

  void pack_rows_of(int64_t b, int64_t h, int64_t q_len, float* q, float* dout) const {
    const attnrt_attention_desc& d = p.desc;
    pack_rows(p.q, d.dtype, b, h, 0, q_len, d.head_dim, d.softmax_scale, q, t.hd_pad);
    pack_rows(p.dout, d.dtype, b, h, 0, q_len, d.head_dim_v, 1.0f, dout, t.hv_pad);
  }
  void pack_tile(float* tile, int64_t b, int64_t hk, int64_t k0, int64_t nk) const {
    const attnrt_attention_desc& d = p.desc;
    const int64_t hd = d.head_dim, hv = d.head_dim_v, bk = t.bwd_k;
    pack_rows_transposed(p.k, d.dtype, b, hk, k0, nk, hd, tile, bk);                            // k^T [hd, bk]
    pack_rows(p.k, d.dtype, b, hk, k0, nk, hd, 1.0f, tile + hd * bk, t.hd_pad);                 // k [bk, hd_pad]
    pack_rows_transposed(p.v, d.dtype, b, hk, k0, nk, hv, tile + hd * bk + bk * t.hd_pad, bk);  // v^T [hv, bk]
  }
  // w.p = scaled scores, w.dp = dout v^T.
  void scores_and_dp(const Buffers& w, const float* q, const float* dout, const float* tile, int64_t nq) {
    const int64_t hd = p.desc.head_dim, hv = p.desc.head_dim_v, bk = t.bwd_k;
    gemm(w.p, bk, q, t.hd_pad, 1, tile, bk, nq, bk, hd, false);                                // s = q k^T
    gemm(w.dp, bk, dout, t.hv_pad, 1, tile + hd * bk + bk * t.hd_pad, bk, nq, bk, hv, false);  // dp = dout v^T
  }
  void round_p_ds(const Buffers& /*w*/, int64_t /*nq*/) const {}
  void dv_dk(const Buffers& w, const float* q, const float* dout, int64_t nq, int64_t nk) {
    const int64_t bk = t.bwd_k;
    gemm(w.dv, t.hv_pad, w.p, 1, bk, dout, t.hv_pad, nk, t.hv_pad, nq, true);  // dv += p^T dout
    gemm(w.dk, t.hd_pad, w.dp, 1, bk, q, t.hd_pad, nk, t.hd_pad, nq, true);    // dk += ds^T q
  }
  void dq(const Buffers& w, const float* tile, int64_t nq, int64_t nk) {
    const int64_t bk = t.bwd_k, hd = p.desc.head_dim;
    gemm(w.dq, t.hd_pad, w.dp, bk, 1, tile + hd * bk, t.hd_pad, nq, t.hd_pad, nk, true);  // dq += ds k
  }
  void check() const { gemm.check(); }
};

// bf16 operands. Packed rows: q [hd] and dout [hv] as given; key tile: k [bk, hd] and
// v [bk, hv], rows past the sequence zeroed. p and ds enter their products (dv; dk and dq) as
// hi + lo, two bf16 parts whose sum carries 16 of fp32's 24 bits: rounded once to bf16 (as
// FlashAttention-2 does on GPUs), dk in a varlen case of `attnrt check` was 2.2x eager's error
// and dv 1.9x with ds split (the kit's bar is 2x); eager rounds nothing before its output.
struct Bf16Format {
  const BackwardProblem& p;
  const Tiles& t;
  Bf16TileGemm gemm;
  SplitToBf16Fn split = split_to_bf16();

  using Row = uint16_t;
  int64_t q_ld() const { return p.desc.head_dim; }
  int64_t dout_ld() const { return p.desc.head_dim_v; }
  float dk_scale() const { return p.desc.softmax_scale; }

  void pack_rows_of(int64_t b, int64_t h, int64_t q_len, uint16_t* q, uint16_t* dout) const {
    copy_bf16_rows(p.q, b, h, 0, q_len, p.desc.head_dim, q, q_len);
    copy_bf16_rows(p.dout, b, h, 0, q_len, p.desc.head_dim_v, dout, q_len);
  }
  void pack_tile(float* tile, int64_t b, int64_t hk, int64_t k0, int64_t nk) const {
    const int64_t hd = p.desc.head_dim, hv = p.desc.head_dim_v, bk = t.bwd_k;
    uint16_t* k = reinterpret_cast<uint16_t*>(tile);
    copy_bf16_rows(p.k, b, hk, k0, nk, hd, k, bk);
    copy_bf16_rows(p.v, b, hk, k0, nk, hv, k + bk * hd, bk);
  }
  const uint16_t* k_of(const float* tile) const { return reinterpret_cast<const uint16_t*>(tile); }
  const uint16_t* v_of(const float* tile) const { return k_of(tile) + t.bwd_k * p.desc.head_dim; }
  // w.p = softmax_scale * q k^T, w.dp = dout v^T, both [bwd_q, bwd_k] whatever nq is (rows past
  // nq read the next packed rows, or the zeroed rows after the last).
  void scores_and_dp(const Buffers& w, const uint16_t* q, const uint16_t* dout, const float* tile, int64_t nq) {
    const int64_t hd = p.desc.head_dim, hv = p.desc.head_dim_v, bk = t.bwd_k, bq = t.bwd_q;
    gemm(w.p, bk, q, hd, 1, k_of(tile), 1, hd, bq, bk, hd, false);
    gemm(w.dp, bk, dout, hv, 1, v_of(tile), 1, hv, bq, bk, hv, false);
    const float scale = p.desc.softmax_scale;
    for (int64_t r = 0; r < nq; ++r) scale_row(w.p + r * bk, bk, scale);
  }
  void round_p_ds(const Buffers& w, int64_t nq) const {
    const int64_t bk = t.bwd_k;
    split(w.p, w.p16, w.p16_lo, nq * bk);
    split(w.dp, w.ds16, w.ds16_lo, nq * bk);
    std::fill(w.p16 + nq * bk, w.p16 + t.bwd_q * bk, uint16_t{0});
    std::fill(w.p16_lo + nq * bk, w.p16_lo + t.bwd_q * bk, uint16_t{0});
    std::fill(w.ds16 + nq * bk, w.ds16 + t.bwd_q * bk, uint16_t{0});
    std::fill(w.ds16_lo + nq * bk, w.ds16_lo + t.bwd_q * bk, uint16_t{0});
  }
  void dv_dk(const Buffers& w, const uint16_t* q, const uint16_t* dout, int64_t /*nq*/, int64_t /*nk*/) {
    const int64_t hd = p.desc.head_dim, hv = p.desc.head_dim_v, bk = t.bwd_k, bq = t.bwd_q;
    gemm(w.dv, t.hv_pad, w.p16, 1, bk, dout, hv, 1, bk, hv, bq, true);     // dv += p^T dout, hi part
    gemm(w.dv, t.hv_pad, w.p16_lo, 1, bk, dout, hv, 1, bk, hv, bq, true);  // and lo part
    gemm(w.dk, t.hd_pad, w.ds16, 1, bk, q, hd, 1, bk, hd, bq, true);       // dk += ds^T q, hi part
    gemm(w.dk, t.hd_pad, w.ds16_lo, 1, bk, q, hd, 1, bk, hd, bq, true);    // and lo part
  }
  void dq(const Buffers& w, const float* tile, int64_t /*nq*/, int64_t /*nk*/) {
    const int64_t hd = p.desc.head_dim, bk = t.bwd_k, bq = t.bwd_q;
    gemm(w.dq, t.hd_pad, w.ds16, bk, 1, k_of(tile), hd, 1, bq, hd, bk, true);     // dq += ds k, hi part
    gemm(w.dq, t.hd_pad, w.ds16_lo, bk, 1, k_of(tile), hd, 1, bq, hd, bk, true);  // and lo part
  }
  void check() const { gemm.check(); }
};

template <class Format>
void run_backward(const BackwardProblem& p, float* workspace, int num_threads, Format& fmt) {
  using Row = typename Format::Row;
  const attnrt_attention_desc& d = p.desc;
  const Tiles t = tiles_for(d);
  const int64_t hd = d.head_dim, hv = d.head_dim_v, group = p.group(), bk = t.bwd_k, bq = t.bwd_q;
  const int64_t total_q = p.lengths.cu_q ? p.lengths.cu_q[d.batch] : static_cast<int64_t>(d.batch) * d.seqlen_q;
  const size_t per_thread = backward_floats_per_thread(d);
  const int64_t q_ld = fmt.q_ld(), dout_ld = fmt.dout_ld();
  // Packed rows of every head, then bwd_q zeroed rows (full-shape bf16 products read past the
  // last block); sized in floats for the fp32 format, which the bf16 one fits in.
  const size_t rows = static_cast<size_t>(d.heads_q) * total_q + bq;
  float* D = workspace + per_thread * static_cast<size_t>(num_threads);                // [heads_q, total_q]
  Row* q_rows = reinterpret_cast<Row*>(D + static_cast<size_t>(d.heads_q) * total_q);  // [rows, q_ld]
  Row* dout_rows = reinterpret_cast<Row*>(D + static_cast<size_t>(d.heads_q) * total_q + rows * t.hd_pad);
  float* kv_tiles = D + static_cast<size_t>(d.heads_q) * total_q + rows * (t.hd_pad + t.hv_pad);
  const int64_t tiles_per_seq = (d.seqlen_k + bk - 1) / bk;
  const int64_t tile_floats = static_cast<int64_t>(backward_tile_floats(d));
  float* dsink_partial =
      kv_tiles + static_cast<size_t>(d.batch) * tiles_per_seq * d.heads_kv * tile_floats;  // [batch, heads_q]
  const int64_t batch_heads = static_cast<int64_t>(d.batch) * d.heads_q;
  // Packed operands of query rows (b, i..) of head h, and of key tile (b, hk, kb).
  auto q_at = [&](int64_t b, int64_t h, int64_t i) { return q_rows + (h * total_q + packed_row(p, b, i)) * q_ld; };
  auto dout_at = [&](int64_t b, int64_t h, int64_t i) {
    return dout_rows + (h * total_q + packed_row(p, b, i)) * dout_ld;
  };
  auto tile_at = [&](int64_t b, int64_t hk, int64_t kb) {
    return kv_tiles + ((b * d.heads_kv + hk) * tiles_per_seq + kb) * tile_floats;
  };
  std::fill(q_rows + (rows - bq) * q_ld, q_rows + rows * q_ld, Row{0});
  std::fill(dout_rows + (rows - bq) * dout_ld, dout_rows + rows * dout_ld, Row{0});

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
    if (q_len > 0) fmt.pack_rows_of(b, h, q_len, q_at(b, h, 0), dout_at(b, h, 0));
  }
  const int64_t pack_items = static_cast<int64_t>(d.batch) * d.heads_kv * tiles_per_seq;
#pragma omp parallel for num_threads(num_threads) schedule(static)
  for (int64_t item = 0; item < pack_items; ++item) {
    const int64_t kb = item % tiles_per_seq, hk = (item / tiles_per_seq) % d.heads_kv,
                  b = item / tiles_per_seq / d.heads_kv;
    const int64_t k0 = kb * bk, nk = std::min(bk, p.lengths.k_len(b) - k0);
    if (nk > 0) fmt.pack_tile(tile_at(b, hk, kb), b, hk, k0, nk);
  }

  // dk and dv of key block (b, hk, k0 .. k0+nk), over every query head of its group and every
  // query block whose visible keys meet it, stored at the end; after(h, q0, nq) follows each query
  // block's products, while its ds is in w.
  auto dk_dv_of_block = [&](const Buffers& w, int64_t b, int64_t hk, int64_t k0, int64_t nk, const float* tile,
                            auto&& after) {
    const int64_t q_len = p.lengths.q_len(b);
    std::fill(w.dk, w.dk + bk * t.hd_pad, 0.0f);
    std::fill(w.dv, w.dv + bk * t.hv_pad, 0.0f);
    TileRow row_info[kMaxBackwardTile];  // (on the stack: this runs once per key block)
    float lse[kMaxBackwardTile], Drow[kMaxBackwardTile];
    for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
      const float slope = alibi_slope(p.alibi, b, h);
      for (int64_t q0 = 0; q0 < q_len; q0 += bq) {
        const int64_t nq = std::min(bq, q_len - q0);
        bool any = false;
        for (int64_t r = 0; r < nq; ++r) {
          const KeyRange range = p.keys(b, q0 + r);
          row_info[r] = {q0 + r, range.lo, range.hi, slope};
          any |= range.lo < std::min(range.hi, k0 + nk) && range.hi > k0 && range.lo < k0 + nk;
          lse[r] = p.lse.at(b, h, q0 + r);
          Drow[r] = D[h * total_q + packed_row(p, b, q0 + r)];
        }
        if (!any) continue;
        const Row* q = q_at(b, h, q0);
        const Row* dout = dout_at(b, h, q0);
        fmt.scores_and_dp(w, q, dout, tile, nq);
        p_and_ds_of_tile(p, t, w, row_info, lse, Drow, nq, b, k0, nk);
        fmt.round_p_ds(w, nq);
        fmt.dv_dk(w, q, dout, nq, nk);
        after(h, q0, nq);
      }
    }
    for (int64_t j = 0; j < nk; ++j) {
      store_row(w.dk + j * t.hd_pad, fmt.dk_scale(), d.dtype, p.dk.row(b, k0 + j, hk), hd);
      store_row(w.dv + j * t.hv_pad, 1.0f, d.dtype, p.dv.row(b, k0 + j, hk), hv);
    }
  };

  if (backward_per_head(d, num_threads)) {
    // Passes 1 and 2 in one, per (sequence, kv head): dk and dv key block by key block, and dq
    // summed in fp32 rows of this pair's query heads (added from the thread's own dq tile: the
    // bf16 products write full-shape tiles, whose rows past a block belong to other pairs).
    float* dq_sum = dsink_partial + batch_heads;  // [heads_q, total_q, hd_pad]
    const int64_t pairs = static_cast<int64_t>(d.batch) * d.heads_kv;
#pragma omp parallel for num_threads(num_threads) schedule(dynamic, 1)
    for (int64_t pair = 0; pair < pairs; ++pair) {
      const int64_t b = pair / d.heads_kv, hk = pair % d.heads_kv;
      const int64_t q_len = p.lengths.q_len(b), k_len = p.lengths.k_len(b);
      const Buffers w = carve(workspace + static_cast<size_t>(omp_thread()) * per_thread, t);
      auto dq_row = [&](int64_t h, int64_t i) { return dq_sum + (h * total_q + packed_row(p, b, i)) * t.hd_pad; };
      for (int64_t h = hk * group; h < (hk + 1) * group && q_len > 0; ++h) {
        std::fill(dq_row(h, 0), dq_row(h, 0) + q_len * t.hd_pad, 0.0f);
      }
      for (int64_t k0 = 0; k0 < k_len; k0 += bk) {
        const int64_t nk = std::min(bk, k_len - k0);
        const float* tile = tile_at(b, hk, k0 / bk);
        dk_dv_of_block(w, b, hk, k0, nk, tile, [&](int64_t h, int64_t q0, int64_t nq) {
          std::fill(w.dq, w.dq + bq * t.hd_pad, 0.0f);
          fmt.dq(w, tile, nq, nk);
          float* sum = dq_row(h, q0);
          for (int64_t x = 0; x < nq * t.hd_pad; ++x) sum[x] += w.dq[x];
        });
      }
      // ds is the gradient of the scaled score, so dq = softmax_scale * ds k.
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        for (int64_t i = 0; i < q_len; ++i) store_row(dq_row(h, i), d.softmax_scale, d.dtype, p.dq.row(b, i, h), hd);
      }
    }
    fmt.check();
    if (p.dsinks) kernels::reduce_sink_gradient(dsink_partial, d.batch, d.heads_q, p.dsinks);
    return;
  }

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
    const int64_t nk = std::min(bk, p.lengths.k_len(b) - k0);
    const Buffers w = carve(workspace + static_cast<size_t>(omp_thread()) * per_thread, t);
    dk_dv_of_block(w, b, hk, k0, nk, tile_at(b, hk, kb), [](int64_t, int64_t, int64_t) {});
  }

  // Pass 2: dq of one query block of one head, over the key blocks it sees. Last blocks first:
  // under a causal mask they see the most keys, and a long item started last leaves the other
  // threads idle.
  std::vector<std::pair<int32_t, int32_t>> q_blocks;
  for (int32_t b = 0; b < d.batch; ++b) {
    for (int64_t q0 = 0; q0 < p.lengths.q_len(b); q0 += bq) q_blocks.push_back({b, static_cast<int32_t>(q0 / bq)});
  }
  std::reverse(q_blocks.begin(), q_blocks.end());
  const int64_t q_items = static_cast<int64_t>(q_blocks.size()) * d.heads_q;
#pragma omp parallel for num_threads(num_threads) schedule(dynamic, 1)
  for (int64_t item = 0; item < q_items; ++item) {
    const auto [bb, qb] = q_blocks[item / d.heads_q];
    const int64_t b = bb, h = item % d.heads_q, hk = h / group, q0 = static_cast<int64_t>(qb) * bq;
    const int64_t nq = std::min(bq, p.lengths.q_len(b) - q0);
    const Buffers w = carve(workspace + static_cast<size_t>(omp_thread()) * per_thread, t);
    const float slope = alibi_slope(p.alibi, b, h);
    TileRow row_info[kMaxBackwardTile];
    float lse[kMaxBackwardTile], Drow[kMaxBackwardTile];
    int64_t k_lo = p.lengths.k_len(b), k_hi = 0;
    for (int64_t r = 0; r < nq; ++r) {
      const KeyRange range = p.keys(b, q0 + r);
      row_info[r] = {q0 + r, range.lo, range.hi, slope};
      if (range.lo < range.hi) {
        k_lo = std::min(k_lo, range.lo);
        k_hi = std::max(k_hi, range.hi);
      }
      lse[r] = p.lse.at(b, h, q0 + r);
      Drow[r] = D[h * total_q + packed_row(p, b, q0 + r)];
    }
    const Row* q = q_at(b, h, q0);
    const Row* dout = dout_at(b, h, q0);
    std::fill(w.dq, w.dq + bq * t.hd_pad, 0.0f);
    // Whole packed tiles from the one holding k_lo; the mask covers what lies outside.
    for (int64_t k0 = k_lo / bk * bk; k0 < k_hi; k0 += bk) {
      const int64_t nk = std::min(bk, p.lengths.k_len(b) - k0);
      const float* tile = tile_at(b, hk, k0 / bk);
      fmt.scores_and_dp(w, q, dout, tile, nq);
      p_and_ds_of_tile(p, t, w, row_info, lse, Drow, nq, b, k0, nk);
      fmt.round_p_ds(w, nq);
      fmt.dq(w, tile, nq, nk);
    }
    // ds is the gradient of the scaled score, so dq = softmax_scale * ds k.
    for (int64_t r = 0; r < nq; ++r) {
      store_row(w.dq + r * t.hd_pad, d.softmax_scale, d.dtype, p.dq.row(b, q0 + r, h), hd);
    }
  }

  fmt.check();
  if (p.dsinks) kernels::reduce_sink_gradient(dsink_partial, d.batch, d.heads_q, p.dsinks);
}

}  // namespace

void backward(const BackwardProblem& p, float* workspace, int num_threads) {
  const Tiles t = tiles_for(p.desc);
  if (uses_bf16_products(p.desc)) {
    Bf16Format fmt{p, t, {}};
    run_backward(p, workspace, num_threads, fmt);
  } else {
    Fp32Format fmt{p, t, {}};
    run_backward(p, workspace, num_threads, fmt);
  }
}

}  // namespace attnrt::plugins::sdpa
