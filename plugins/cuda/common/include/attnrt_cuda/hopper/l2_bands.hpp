// How flash_attention_3's grids group the (sequence, head) pairs whose CTAs run together so that
// what they share stays in L2 (forward_tile and backward_tile in the kernels): bands of pairs
// whose shared tensors fit in 16 MiB, a third of the H100's L2. Host code, for every launcher of
// those kernels (flash_attention_3, sink, flex_attention's Hopper path).
#pragma once

#include <attnrt_cuda/params.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace attnrt::cuda::hopper {

// Pairs (up to `pairs`) of `pair_bytes` each that fit in the band's 16 MiB; at least 1.
inline int l2_band(int64_t pair_bytes, int pairs) {
  return static_cast<int>(std::clamp<int64_t>((int64_t(16) << 20) / std::max<int64_t>(pair_bytes, 1), 1, pairs));
}

// The forward's claimed-tile grid: (sequence, q head) pairs, each reading its share of its kv
// head's K and V (a GQA group's q heads are adjacent in a band).
inline int forward_band(const AttentionParams& p, int head_dim, size_t element_bytes) {
  const int64_t pair_bytes = int64_t(p.seqlen_k) * head_dim * 2 * int64_t(element_bytes) / (p.heads_q / p.heads_kv);
  return l2_band(pair_bytes, p.heads_q * p.batch);
}

// The backward's grid: (kv head, sequence) pairs, each reading Q and dO of every q head of its
// group. Banded under a causal mask only (+1-3% there); elsewhere every key block costs the same
// and one pair a band keeps all of one head's CTAs on its Q and dO (banded: -6% at hd64 S2k,
// bench/results/fa3-backward-2026-11-25/).
inline int backward_band(const AttentionParams& p, int head_dim, size_t element_bytes) {
  if (!(p.window_right >= 0 && p.window_left < 0)) return 1;
  const int64_t pair_bytes = int64_t(p.seqlen_q) * (p.heads_q / p.heads_kv) * head_dim * 2 * int64_t(element_bytes);
  return l2_band(pair_bytes, p.heads_kv * p.batch);
}

}  // namespace attnrt::cuda::hopper
