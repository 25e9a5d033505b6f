#include "sdpa_kernels.hpp"

#include <algorithm>

namespace attnrt::plugins::sdpa {

using kernels::kGemmTileN;
using kernels::round_up;

Tiles tiles_for(const attnrt_attention_desc& d) {
  Tiles t{};
  const int64_t group = d.heads_q / d.heads_kv;
  // 64-row, 64-key tiles keep Q, K^T, V, S and O of head_dim 128 inside a 256 KiB L2 share.
  t.block_q = std::max<int64_t>(1, 64 / group);
  t.rows = group * t.block_q;
  t.block_k = 64;
  t.bwd_q = 64;
  t.hd_pad = round_up(d.head_dim, kGemmTileN);
  t.hv_pad = round_up(d.head_dim_v, kGemmTileN);
  return t;
}

size_t forward_floats_per_thread(const attnrt_attention_desc& d) {
  const Tiles t = tiles_for(d);
  // q [rows, hd_pad], k^T [hd, block_k], v [block_k, hv_pad], s [rows, block_k],
  // o [rows, hv_pad], m and l [rows]
  return t.rows * t.hd_pad + d.head_dim * t.block_k + t.block_k * t.hv_pad + t.rows * t.block_k +
         t.rows * t.hv_pad + 2 * t.rows;
}

size_t backward_floats_per_thread(const attnrt_attention_desc& d) {
  const Tiles t = tiles_for(d);
  // q [bwd_q, hd_pad], dout [bwd_q, hv_pad], k^T [hd, block_k], k [block_k, hd_pad],
  // v^T [hv, block_k], p, dp and capped scores [bwd_q, block_k], dk [block_k, hd_pad],
  // dv [block_k, hv_pad], dq [bwd_q, hd_pad]
  return t.bwd_q * t.hd_pad + t.bwd_q * t.hv_pad + d.head_dim * t.block_k + t.block_k * t.hd_pad +
         d.head_dim_v * t.block_k + 3 * t.bwd_q * t.block_k + t.block_k * t.hd_pad +
         t.block_k * t.hv_pad + t.bwd_q * t.hd_pad;
}

size_t backward_floats_shared(const attnrt_attention_desc& d, int64_t total_q) {
  // D = rowsum(dout * out) for every (head, query row); dsinks partial sums [batch, heads_q]
  return static_cast<size_t>(d.heads_q) * total_q + static_cast<size_t>(d.batch) * d.heads_q;
}

}  // namespace attnrt::plugins::sdpa
