#include "sdpa_kernels.hpp"

#include <algorithm>
#include <cstring>

namespace attnrt::plugins::sdpa {

Tiles tiles_for(const attnrt_attention_desc& d) {
  Tiles t{};
  const int64_t group = d.heads_q / d.heads_kv;
  // 128 query rows x 128 keys: Q, K^T, V, S and O of head_dim 128 (~320 KiB) stay in a core's
  // L2, and each packed K^T tile serves 128 rows (measured in bench/: 64x64 tiles were ~20%
  // slower, 256-row tiles no faster). bf16 products take 256 keys: each oneDNN call then does
  // twice the work for its fixed cost (GPU machine's Xeon, AMX, 16 threads: 4.71 vs 5.76 ms at
  // seqlen 2048; 512 keys no faster, and slower at 512).
  t.block_q = std::max<int64_t>(1, 128 / group);
  t.rows = group * t.block_q;
  t.block_k = uses_bf16_products(d) ? 256 : 128;
  // Backward: 128 x 128 (64 x 64 when the products were attnrt's own): each oneDNN call does
  // 8x the work for its fixed cost (GPU machine's Xeon, 16 threads, seqlen 2048: bf16 14.4 vs
  // 19.8 ms, fp32 29.7 vs 36.4 ms).
  t.bwd_q = 128;
  t.bwd_k = 128;
  t.hd_pad = round_up(d.head_dim, kColumnMultiple);
  t.hv_pad = round_up(d.head_dim_v, kColumnMultiple);
  return t;
}

size_t forward_floats_per_thread(const attnrt_attention_desc& d) {
  const Tiles t = tiles_for(d);
  // q [rows, hd_pad], s [rows, block_k], o [rows, hv_pad], m and l [rows], and for bf16
  // products p [rows, block_k] as bf16 (sdpa_forward.cpp's carve)
  return t.rows * t.hd_pad + t.rows * t.block_k + t.rows * t.hv_pad + 2 * t.rows + (t.rows * t.block_k + 1) / 2;
}

size_t forward_floats_tiles(const attnrt_attention_desc& d) {
  const Tiles t = tiles_for(d);
  // Every key tile of every (sequence, kv head), packed once: k^T [hd, block_k] and
  // v [block_k, hv_pad], then one int32 state per tile (sdpa_forward.cpp's TileStates).
  // batch * seqlen_k bounds the keys of varlen and paged calls too.
  const int64_t tiles = static_cast<int64_t>(d.batch) * ((d.seqlen_k + t.block_k - 1) / t.block_k) * d.heads_kv;
  return static_cast<size_t>(tiles) * (t.block_k * (d.head_dim + t.hv_pad) + 1);
}

int64_t forward_items_bound(const attnrt_attention_desc& d) {
  const Tiles t = tiles_for(d);
  return static_cast<int64_t>(d.batch) * ((d.seqlen_q + t.block_q - 1) / t.block_q) * d.heads_kv;
}

int64_t forward_splits(const attnrt_attention_desc& d, int num_threads) {
  if (d.deterministic || num_threads <= 1) return 1;
  const Tiles t = tiles_for(d);
  const int64_t items = std::max<int64_t>(1, forward_items_bound(d));
  const int64_t key_tiles = (d.seqlen_k + t.block_k - 1) / t.block_k;
  if (items >= num_threads) return 1;
  const int64_t want = (num_threads + items - 1) / items;
  return std::clamp<int64_t>(want, 1, std::max<int64_t>(1, std::min(key_tiles, kMaxForwardSplits)));
}

size_t forward_floats_shared(const attnrt_attention_desc& d, int num_threads) {
  const int64_t splits = forward_splits(d, num_threads);
  if (splits == 1) return forward_floats_tiles(d);
  const Tiles t = tiles_for(d);
  // Each unit's partial state, then one int32 arrival count per item.
  const int64_t items = forward_items_bound(d);
  return forward_floats_tiles(d) + static_cast<size_t>(items * splits * split_partial_floats(t) + items);
}

size_t backward_floats_per_thread(const attnrt_attention_desc& d) {
  const Tiles t = tiles_for(d);
  // p, dp and capped scores [bwd_q, bwd_k], dk [bwd_k, hd_pad], dv [bwd_k, hv_pad],
  // dq [bwd_q, hd_pad], and p and ds as bf16 hi and lo parts [bwd_q, bwd_k] each
  // (sdpa_backward.cpp's carve)
  return 3 * t.bwd_q * t.bwd_k + t.bwd_k * t.hd_pad + t.bwd_k * t.hv_pad + t.bwd_q * t.hd_pad + 2 * t.bwd_q * t.bwd_k;
}

size_t backward_tile_floats(const attnrt_attention_desc& d) {
  const Tiles t = tiles_for(d);
  return t.bwd_k * (d.head_dim + t.hd_pad + d.head_dim_v);
}

bool backward_per_head(const attnrt_attention_desc& d, int num_threads) {
  return !d.deterministic && static_cast<int64_t>(d.batch) * d.heads_kv >= 2 * static_cast<int64_t>(num_threads);
}

size_t backward_floats_shared(const attnrt_attention_desc& d, int64_t total_q, int num_threads) {
  const Tiles t = tiles_for(d);
  // Per (head, query row): D = rowsum(dout * out); q [hd_pad] and dout [hv_pad] rows, plus bwd_q
  // zeroed rows after the last. Per key tile of every (sequence, kv head): backward_tile_floats.
  // dsinks partial sums [batch, heads_q].
  const size_t rows = static_cast<size_t>(d.heads_q) * total_q;
  const size_t tiles = static_cast<size_t>(d.batch) * ((d.seqlen_k + t.bwd_k - 1) / t.bwd_k) * d.heads_kv;
  // The per-head path's dq accumulators: [heads_q, total_q, hd_pad].
  const size_t dq = backward_per_head(d, num_threads) ? rows * t.hd_pad : 0;
  return rows + (rows + t.bwd_q) * (t.hd_pad + t.hv_pad) + tiles * backward_tile_floats(d) +
         static_cast<size_t>(d.batch) * d.heads_q + dq;
}

void copy_bf16_rows(const kernels::RowTensor& src, int64_t b, int64_t h, int64_t t0, int64_t n, int64_t dim,
                    uint16_t* dst, int64_t rows) {
  for (int64_t r = 0; r < n; ++r) std::memcpy(dst + r * dim, src.row(b, t0 + r, h), dim * sizeof(uint16_t));
  std::fill(dst + n * dim, dst + rows * dim, uint16_t{0});
}

}  // namespace attnrt::plugins::sdpa
