// Forward: FlashAttention-2, Algorithm 1, on CPU tiles. A first pass packs every key tile once
// (k^T and v as fp32, contiguous: O(seqlen) memory), so query tiles never re-transpose or
// re-convert keys. Then each work item is (sequence, kv head, query block); it walks the key
// tiles its rows can see, keeping a running max m, sum l and unnormalized output O per row,
// and never holds more than one [rows, block_k] score tile.
#include "sdpa_kernels.hpp"

#include <attnrt_kernels/threads.hpp>
#include <attnrt_kernels/tile.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace attnrt::plugins::sdpa {

using namespace attnrt::kernels;

namespace {

struct Item {
  int32_t b, q_block;
};

std::vector<Item> query_blocks(const ForwardProblem& p, int64_t block_q) {
  std::vector<Item> items;
  for (int32_t b = 0; b < p.desc.batch; ++b) {
    const int64_t blocks = (p.lengths.q_len(b) + block_q - 1) / block_q;
    for (int32_t qb = 0; qb < blocks; ++qb) items.push_back({b, qb});
  }
  return items;
}

}  // namespace

void forward(const ForwardProblem& p, float* workspace, int num_threads) {
  const attnrt_attention_desc& d = p.desc;
  const Tiles t = tiles_for(d);
  const int64_t hd = d.head_dim, hv = d.head_dim_v, group = p.group(), bk = t.block_k;
  const size_t per_thread = forward_floats_per_thread(d);
  const std::vector<Item> blocks = query_blocks(p, t.block_q);
  const int64_t items = static_cast<int64_t>(blocks.size()) * d.heads_kv;

  // Pass 1: pack key tiles. Tile (b, hk, kb) lives at kv_tiles + tile_index * tile_floats.
  float* kv_tiles = workspace + per_thread * static_cast<size_t>(num_threads);
  const int64_t tiles_per_seq = (d.seqlen_k + bk - 1) / bk;
  const int64_t tile_floats = bk * (hd + t.hv_pad);
  auto tile_of = [&](int64_t b, int64_t hk, int64_t kb) {
    return kv_tiles + ((b * d.heads_kv + hk) * tiles_per_seq + kb) * tile_floats;
  };
  const int64_t pack_items = static_cast<int64_t>(d.batch) * d.heads_kv * tiles_per_seq;
#pragma omp parallel for num_threads(num_threads) schedule(static)
  for (int64_t item = 0; item < pack_items; ++item) {
    const int64_t kb = item % tiles_per_seq, hk = (item / tiles_per_seq) % d.heads_kv,
                  b = item / tiles_per_seq / d.heads_kv;
    const int64_t k0 = kb * bk, nk = std::min(bk, p.lengths.k_len(b) - k0);
    if (nk <= 0) continue;
    float* tile = tile_of(b, hk, kb);
    pack_rows_transposed(p.k, d.dtype, b, hk, k0, nk, hd, tile, bk);
    pack_rows(p.v, d.dtype, b, hk, k0, nk, hv, 1.0f, tile + hd * bk, t.hv_pad);
  }

  // Pass 2: query tiles.
#pragma omp parallel for num_threads(num_threads) schedule(dynamic, 1)
  for (int64_t item = 0; item < items; ++item) {
    const Item blk = blocks[item / d.heads_kv];
    const int64_t b = blk.b, hk = item % d.heads_kv;
    const int64_t q_len = p.lengths.q_len(b), k_len = p.lengths.k_len(b);
    const int64_t q0 = blk.q_block * t.block_q, nq = std::min(t.block_q, q_len - q0);
    const int64_t rows = group * nq;

    float* q = workspace + static_cast<size_t>(omp_thread()) * per_thread;  // [rows, hd_pad]
    float* s = q + t.rows * t.hd_pad;                                       // [rows, bk]
    float* o = s + t.rows * bk;                                             // [rows, hv_pad]
    float* m = o + t.rows * t.hv_pad;                                       // [rows]
    float* l = m + t.rows;                                                  // [rows]
    std::vector<TileRow> row_info(rows);

    // Row r of the tile is query q0 + r % nq of head hk * group + r / nq.
    int64_t k_lo = k_len, k_hi = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t h = hk * group + r / nq, i = q0 + r % nq;
      const KeyRange range = p.keys(b, i);
      row_info[r] = {i, range.lo, range.hi, alibi_slope(p.alibi, b, h)};
      if (range.lo < range.hi) {
        k_lo = std::min(k_lo, range.lo);
        k_hi = std::max(k_hi, range.hi);
      }
      load_row_scaled(p.q.row(b, i, h), d.dtype, d.softmax_scale, q + r * t.hd_pad, hd);
    }
    std::fill(o, o + rows * t.hv_pad, 0.0f);
    std::fill(m, m + rows, kNegInf);
    std::fill(l, l + rows, 0.0f);

    // Walk whole packed tiles: start at the tile holding k_lo, mask what lies outside.
    for (int64_t k0 = k_lo / bk * bk; k0 < k_hi; k0 += bk) {
      const int64_t nk = std::min(bk, k_len - k0);
      const int64_t width = round_up(nk, kGemmTileN);  // short sequences: no work on padding
      const float* kt = tile_of(b, hk, k0 / bk);
      const float* v = kt + hd * bk;
      gemm_overwrite(s, bk, q, t.hd_pad, 1, kt, bk, rows, width, hd);
      transform_scores(s, bk, width, row_info.data(), rows, k0, nk, d.softcap, p.diag_offset(b), nullptr);
      for (int64_t r = 0; r < rows; ++r) {
        float* sr = s + r * bk;
        const float m_new = std::max(m[r], row_max(sr, width));
        if (m_new == kNegInf) {  // nothing visible yet: p = 0 for the whole row
          std::fill(sr, sr + width, 0.0f);
          continue;
        }
        const float alpha = std::exp(m[r] - m_new);  // rescales what was summed so far
        l[r] = l[r] * alpha + exp_subtract_sum(sr, width, m_new);
        if (alpha != 1.0f) scale_row(o + r * t.hv_pad, t.hv_pad, alpha);
        m[r] = m_new;
      }
      gemm_accumulate(o, t.hv_pad, s, bk, 1, v, t.hv_pad, rows, t.hv_pad, nk);
    }

    // Epilogue: fold the sink logit into the denominator, normalize, write out and LSE.
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t h = hk * group + r / nq, i = row_info[r].i;
      float mr = m[r], lr = l[r];
      if (p.sinks) {
        const float sink = p.sinks[h];
        const float mx = std::max(mr, sink);
        lr = (lr > 0.0f ? lr * std::exp(mr - mx) : 0.0f) + std::exp(sink - mx);
        scale_row(o + r * t.hv_pad, t.hv_pad, lr > 0.0f && mr != kNegInf ? std::exp(mr - mx) : 0.0f);
        mr = mx;
      }
      const float inv = lr > 0.0f ? 1.0f / lr : 0.0f;
      store_row(o + r * t.hv_pad, inv, d.dtype, p.out.row(b, i, h), hv);
      if (p.lse) p.lse.at(b, h, i) = lr > 0.0f ? mr + std::log(lr) : kNegInf;
    }
  }
}

}  // namespace attnrt::plugins::sdpa
