// What the two query-block kernels (the forward and the dq pass) share: which (sequence, head,
// block of BM query rows) a CTA of a (query blocks, heads_q, batch) grid owns, and which key
// blocks its rows see (the score policy's key_blocks, score_policy.cuh).
#pragma once

#include <attnrt_cuda/score_policy.cuh>
#include <attnrt_cuda/tile.cuh>

namespace attnrt::cuda::fa2 {

struct QueryBlock {
  Seq seq;
  int b, h, hk;     // sequence, query head, its key/value head (GQA/MQA)
  int m0;           // first query row of the block, within the sequence
  BlockRange keys;  // blocks of BN keys any row of the block can see (empty past the sequence)
  __device__ bool past_end() const { return m0 >= seq.q_len; }
};

// Last query blocks first: under a causal mask they see the most keys, so the longest CTAs start
// in the first wave and the short ones fill in behind them (FlashAttention-2's order).
template <int BM, int BN, class Policy>
__device__ __forceinline__ QueryBlock query_block(const AttentionParams& p) {
  QueryBlock qb;
  qb.b = static_cast<int>(blockIdx.z);
  qb.h = static_cast<int>(blockIdx.y);
  qb.hk = qb.h / (p.heads_q / p.heads_kv);
  qb.seq = sequence(p, qb.b);
  qb.m0 = static_cast<int>(gridDim.x - 1 - blockIdx.x) * BM;
  // Every policy walks inside the descriptor's key range (block-sparse ones skip within it).
  qb.keys = qb.past_end() ? BlockRange{0, 0} : StandardScores(p, qb.seq).key_blocks(qb.m0, BM, BN);
  return qb;
}

}  // namespace attnrt::cuda::fa2
