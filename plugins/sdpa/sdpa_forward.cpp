// Forward: FlashAttention-2, Algorithm 1, on CPU tiles. Each key tile is packed once
// (contiguous, O(seqlen) memory), so query tiles never re-transpose or re-convert keys. Each work
// item is (sequence, kv head, query block); it walks the key tiles its rows can see, keeping a
// running max m, sum l and unnormalized output O per row, and never holds more than one
// [rows, block_k] score tile. The first item to reach a key tile packs it (TileStates), so a call
// is one parallel region: a packing pass of its own ended in a barrier that waited for the
// slowest thread to start, 20% of a short call on the GPU machine's 16 cores (docs/perf.md).
// A call with fewer items than threads (a decode step has one per kv head) splits each item's
// key tiles among a few units, whose partial states the item's last unit merges (forward_splits,
// sdpa_kernels.hpp).
//
// Two operand formats, one walk: fp32 tiles through oneDNN's sgemm (every dtype), and bf16 tiles
// through its bf16 matmul where the CPU has bf16 instructions (AVX512-BF16, AMX) and the inputs
// are bf16. The bf16 path rounds P to bf16 before P V, as FlashAttention-2 on GPUs and PyTorch's
// CPU kernel do; its scores are exact products of the bf16 inputs, accumulated in fp32.
#include "onednn_library.hpp"
#include "online_softmax.hpp"
#include "sdpa_gemm.hpp"
#include "sdpa_kernels.hpp"

#include <attnrt_kernels/threads.hpp>
#include <attnrt_kernels/tile.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
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

// Per packed key tile: 0 not packed, 1 being packed by one thread, 2 ready. The item that
// claims a tile packs it; an item that finds it being packed waits (for one tile's copy: the
// claimer is running, never waiting on anything itself).
class TileStates {
 public:
  explicit TileStates(int32_t* states) : states_(states) {}

  template <class Pack>
  void ensure(int64_t tile, Pack&& pack) {
    std::atomic_ref<int32_t> state(states_[tile]);
    if (state.load(std::memory_order_acquire) == kReady) return;
    int32_t expected = kEmpty;
    if (state.compare_exchange_strong(expected, kPacking, std::memory_order_acq_rel)) {
      pack();
      state.store(kReady, std::memory_order_release);
      return;
    }
    while (state.load(std::memory_order_acquire) != kReady) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
  }

 private:
  static constexpr int32_t kEmpty = 0, kPacking = 1, kReady = 2;
  int32_t* states_;
};

// One thread's tiles: q [rows, hd_pad] (fp32) or [rows, hd] (bf16), s [rows, bk], p [rows, bk]
// (bf16 only), o [rows, hv_pad], m and l [rows].
struct ThreadTiles {
  float *q, *s, *o, *m, *l;
  uint16_t* p;
};

ThreadTiles carve(float* base, const Tiles& t) {
  ThreadTiles w{};
  w.q = base;
  w.s = w.q + t.rows * t.hd_pad;
  w.o = w.s + t.rows * t.block_k;
  w.m = w.o + t.rows * t.hv_pad;
  w.l = w.m + t.rows;
  w.p = reinterpret_cast<uint16_t*>(w.l + t.rows);  // rows * block_k bf16: forward_floats_per_thread
  return w;
}

// A unit's partial state in the workspace (split_partial_floats): o [cap, hv_pad], then m and l
// [cap] (cap = the tile's rows).
struct Partial {
  float *o, *m, *l;
};

Partial partial_at(float* base, int64_t unit, const Tiles& t) {
  float* o = base + unit * split_partial_floats(t);
  return {o, o + t.rows * t.hv_pad, o + t.rows * t.hv_pad + t.rows};
}

// The splits' partial states of `rows` rows merged into o, m, l in split order (so the result
// does not depend on which thread finished last): m = max_s m_s, l = sum_s l_s e^(m_s - m),
// O = sum_s O_s e^(m_s - m) (FlashDecoding's combine, in the unnormalized form the walk keeps).
void merge_splits(float* base, int64_t first_unit, int64_t splits, int64_t rows, const Tiles& t, float* o, float* m,
                  float* l) {
  for (int64_t r = 0; r < rows; ++r) {
    float mx = kNegInf;
    for (int64_t s = 0; s < splits; ++s) mx = std::max(mx, partial_at(base, first_unit + s, t).m[r]);
    float* out = o + r * t.hv_pad;
    std::fill(out, out + t.hv_pad, 0.0f);
    float sum = 0.0f;
    if (mx != kNegInf) {
      for (int64_t s = 0; s < splits; ++s) {
        const Partial part = partial_at(base, first_unit + s, t);
        if (part.m[r] == kNegInf) continue;  // saw no key: l and O are zero
        const float f = std::exp(part.m[r] - mx);
        sum += part.l[r] * f;
        const float* in = part.o + r * t.hv_pad;
        for (int64_t c = 0; c < t.hv_pad; ++c) out[c] += f * in[c];
      }
    }
    m[r] = mx;
    l[r] = sum;
  }
}

// fp32 operands: k^T [hd, bk] and v [bk, hv_pad] per key tile; q pre-scaled by softmax_scale.
struct Fp32Format {
  const ForwardProblem& p;
  const Tiles& t;
  TileGemm gemm;

  int64_t tile_floats() const { return t.block_k * (p.desc.head_dim + t.hv_pad); }
  bool prescaled() const { return true; }

  void pack(float* tile, int64_t b, int64_t hk, int64_t k0, int64_t nk) const {
    const attnrt_attention_desc& d = p.desc;
    pack_rows_transposed(p.k, d.dtype, b, hk, k0, nk, d.head_dim, tile, t.block_k);
    pack_rows(p.v, d.dtype, b, hk, k0, nk, d.head_dim_v, 1.0f, tile + d.head_dim * t.block_k, t.hv_pad);
  }
  void load_q(const ThreadTiles& w, int64_t r, const void* row) const {
    load_row_scaled(row, p.desc.dtype, p.desc.softmax_scale, w.q + r * t.hd_pad, p.desc.head_dim);
  }
  void pad_q(const ThreadTiles& /*w*/, int64_t /*rows*/) const {}
  void scores(const ThreadTiles& w, const float* tile, int64_t rows, int64_t width) {
    gemm(w.s, t.block_k, w.q, t.hd_pad, 1, tile, t.block_k, rows, width, p.desc.head_dim, false);
  }
  uint16_t* p_bf16(const ThreadTiles& /*w*/) const { return nullptr; }  // p stays in s, fp32
  void accumulate_pv(const ThreadTiles& w, const float* tile, int64_t rows, int64_t /*width*/, int64_t nk) {
    gemm(w.o, t.hv_pad, w.s, t.block_k, 1, tile + p.desc.head_dim * t.block_k, t.hv_pad, rows, t.hv_pad, nk, true);
  }
  void check() const { gemm.check(); }
};

// bf16 operands: k [bk, hd] and v [bk, hv], rows past the sequence zeroed, so every product has
// the same shape (one oneDNN primitive each); q as given, the scale applied to the fp32 scores.
struct Bf16Format {
  const ForwardProblem& p;
  const Tiles& t;
  Bf16TileGemm gemm;

  int64_t tile_floats() const { return (t.block_k * (p.desc.head_dim + p.desc.head_dim_v) + 1) / 2; }
  bool prescaled() const { return false; }

  void pack(float* tile, int64_t b, int64_t hk, int64_t k0, int64_t nk) const {
    uint16_t* k = reinterpret_cast<uint16_t*>(tile);
    copy_bf16_rows(p.k, b, hk, k0, nk, p.desc.head_dim, k, t.block_k);
    copy_bf16_rows(p.v, b, hk, k0, nk, p.desc.head_dim_v, k + t.block_k * p.desc.head_dim, t.block_k);
  }
  void load_q(const ThreadTiles& w, int64_t r, const void* row) const {
    std::memcpy(reinterpret_cast<uint16_t*>(w.q) + r * p.desc.head_dim, row, p.desc.head_dim * sizeof(uint16_t));
  }
  // q and p rows past the item's rows are zero, so fixed-shape products stay finite there.
  void pad_q(const ThreadTiles& w, int64_t rows) const {
    const int64_t hd = p.desc.head_dim;
    std::fill(reinterpret_cast<uint16_t*>(w.q) + rows * hd, reinterpret_cast<uint16_t*>(w.q) + t.rows * hd,
              uint16_t{0});
    std::fill(w.p + rows * t.block_k, w.p + t.rows * t.block_k, uint16_t{0});
  }
  // Always t.rows x block_k (one primitive per shape).
  void scores(const ThreadTiles& w, const float* tile, int64_t /*rows*/, int64_t /*width*/) {
    const int64_t hd = p.desc.head_dim;
    gemm(w.s, t.block_k, reinterpret_cast<const uint16_t*>(w.q), hd, 1, reinterpret_cast<const uint16_t*>(tile), 1, hd,
         t.rows, t.block_k, hd, false);
  }
  // The softmax wrote p = exp(score - m) as bf16 into w.p, zero past the tile's width.
  uint16_t* p_bf16(const ThreadTiles& w) const { return w.p; }
  void accumulate_pv(const ThreadTiles& w, const float* tile, int64_t /*rows*/, int64_t /*width*/, int64_t /*nk*/) {
    const int64_t bk = t.block_k, hd = p.desc.head_dim, hv = p.desc.head_dim_v;
    const uint16_t* v = reinterpret_cast<const uint16_t*>(tile) + bk * hd;
    gemm(w.o, t.hv_pad, w.p, bk, 1, v, hv, 1, t.rows, hv, bk, true);
  }
  void check() const { gemm.check(); }
};

template <class Format>
void run_forward(const ForwardProblem& p, float* workspace, int num_threads, Format& fmt) {
  const attnrt_attention_desc& d = p.desc;
  const Tiles t = tiles_for(d);
  const int64_t hv = d.head_dim_v, group = p.group(), bk = t.block_k;
  const size_t per_thread = forward_floats_per_thread(d);
  // Last query blocks first: under a causal mask they see the most keys, and a long item
  // started last leaves the other threads idle.
  std::vector<Item> blocks = query_blocks(p, t.block_q);
  std::reverse(blocks.begin(), blocks.end());
  const int64_t items = static_cast<int64_t>(blocks.size()) * d.heads_kv;
  // Unscaled scores (bf16): scale them here where softcap or ALiBi must see scaled ones.
  const float scale = d.softmax_scale;
  const bool fold_scale = !fmt.prescaled() && d.softcap <= 0.0f && !p.alibi && scale > 0.0f;

  // Key tile (b, hk, kb) lives at kv_tiles + tile_index * tile_floats, packed by the first item
  // that needs it; the tiles' states follow them.
  float* kv_tiles = workspace + per_thread * static_cast<size_t>(num_threads);
  const int64_t tiles_per_seq = (d.seqlen_k + bk - 1) / bk;
  const int64_t tile_floats = fmt.tile_floats();
  const int64_t num_tiles = static_cast<int64_t>(d.batch) * d.heads_kv * tiles_per_seq;
  int32_t* states = reinterpret_cast<int32_t*>(kv_tiles + num_tiles * tile_floats);
  std::fill(states, states + num_tiles, 0);
  // Key splits: each unit's partial state, then each item's count of finished units (in the
  // workspace only where the call splits: forward_floats_shared).
  const int64_t splits = forward_splits(d, num_threads);
  float* partials = splits > 1 ? kv_tiles + forward_floats_tiles(d) : nullptr;
  int32_t* arrivals = splits > 1 ? reinterpret_cast<int32_t*>(partial_at(partials, items * splits, t).o) : nullptr;
  if (splits > 1) std::fill(arrivals, arrivals + items, 0);
  TileStates packed(states);
  auto tile_of = [&](int64_t b, int64_t hk, int64_t kb) {
    const int64_t index = (b * d.heads_kv + hk) * tiles_per_seq + kb;
    packed.ensure(index, [&] {
      const int64_t k0 = kb * bk;
      fmt.pack(kv_tiles + index * tile_floats, b, hk, k0, std::min(bk, p.lengths.k_len(b) - k0));
    });
    return static_cast<const float*>(kv_tiles + index * tile_floats);
  };

  const OnlineSoftmaxFn softmax = online_softmax();
#pragma omp parallel for num_threads(num_threads) schedule(dynamic, 1)
  for (int64_t unit = 0; unit < items * splits; ++unit) {
    const int64_t item = unit / splits, split = unit % splits;
    const Item blk = blocks[item / d.heads_kv];
    const int64_t b = blk.b, hk = item % d.heads_kv;
    const int64_t q_len = p.lengths.q_len(b), k_len = p.lengths.k_len(b);
    const int64_t q0 = blk.q_block * t.block_q, nq = std::min(t.block_q, q_len - q0);
    const int64_t rows = group * nq;
    const ThreadTiles w = carve(workspace + static_cast<size_t>(omp_thread()) * per_thread, t);
    float *s = w.s, *o = w.o, *m = w.m, *l = w.l;
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
    }
    // Whole packed tiles, from the one holding k_lo (what lies outside is masked); this unit's
    // share of them.
    const int64_t first = k_lo < k_hi ? k_lo / bk : 0, count = k_lo < k_hi ? (k_hi + bk - 1) / bk - first : 0;
    const int64_t from = first + count * split / splits, to = first + count * (split + 1) / splits;
    if (from < to) {
      for (int64_t r = 0; r < rows; ++r) fmt.load_q(w, r, p.q.row(b, row_info[r].i, hk * group + r / nq));
      fmt.pad_q(w, rows);
    }
    std::fill(o, o + rows * t.hv_pad, 0.0f);
    std::fill(m, m + rows, kNegInf);
    std::fill(l, l + rows, 0.0f);

    for (int64_t k0 = from * bk; k0 < to * bk; k0 += bk) {
      const int64_t nk = std::min(bk, k_len - k0);
      const int64_t width = round_up(nk, kColumnMultiple);  // short sequences: no work on padding
      const float* tile = tile_of(b, hk, k0 / bk);
      fmt.scores(w, tile, rows, width);
      if (!fmt.prescaled() && !fold_scale) {
        for (int64_t r = 0; r < rows; ++r) scale_row(s + r * bk, width, scale);
      }
      transform_scores(s, bk, width, row_info.data(), rows, k0, nk, d.softcap, p.diag_offset(b), nullptr);
      // max(scale x) = scale max(x) for scale > 0, so the scale folds into the exponent.
      softmax({.s = s,
               .ld_s = bk,
               .rows = rows,
               .width = width,
               .scale = fold_scale ? scale : 1.0f,
               .m = m,
               .l = l,
               .o = o,
               .ld_o = t.hv_pad,
               .o_width = t.hv_pad,
               .p_bf16 = fmt.p_bf16(w),
               .ld_p = bk,
               .p_width = bk});
      fmt.accumulate_pv(w, tile, rows, width, nk);
    }

    if (splits > 1) {
      // Published with the arrival (release); the last unit reads every split's (acquire).
      const Partial mine = partial_at(partials, unit, t);
      std::copy(o, o + rows * t.hv_pad, mine.o);
      std::copy(m, m + rows, mine.m);
      std::copy(l, l + rows, mine.l);
      if (std::atomic_ref<int32_t>(arrivals[item]).fetch_add(1, std::memory_order_acq_rel) != splits - 1) continue;
      merge_splits(partials, item * splits, splits, rows, t, o, m, l);
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
  fmt.check();
}

}  // namespace

bool uses_bf16_products(const attnrt_attention_desc& d) {
  return d.dtype == ATTNRT_DTYPE_BF16 && onednn_library().fast_bf16;
}

void forward(const ForwardProblem& p, float* workspace, int num_threads) {
  const Tiles t = tiles_for(p.desc);
  if (uses_bf16_products(p.desc)) {
    Bf16Format fmt{p, t, {}};
    run_forward(p, workspace, num_threads, fmt);
  } else {
    Fp32Format fmt{p, t, {}};
    run_forward(p, workspace, num_threads, fmt);
  }
}

}  // namespace attnrt::plugins::sdpa
