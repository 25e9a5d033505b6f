// What the two dK/dV kernels share: the (q head, query block) steps one CTA of a key block walks
// (every block of BM queries that sees the keys, of every q head of the kv head's GQA group,
// head-major), the loads of a step's Q and dO tiles, and its rows' lse and D.
#pragma once

#include <attnrt_cuda/tile.cuh>

namespace attnrt::cuda::fa2 {

// A query row's lse and D (FlashAttention-2, Algorithm 2), as the forward and softmax_d_kernel
// wrote them. Rows past the sequence keep the defaults: as if the row saw no key.
struct RowStats {
  float lse = -INFINITY, d = 0.f;
  // lse in the log2 domain of the kernels' exp2; +inf where no key is visible, so P = 0.
  __device__ __forceinline__ float lse_log2() const { return lse == -INFINITY ? INFINITY : lse * kLog2e; }
};

template <class T, int HD, int BM, int THREADS>
struct QueryWalk {
  const AttentionParams& p;
  const Seq& seq;
  int b, hk, group, mb_lo, blocks, steps;

  __device__ QueryWalk(const AttentionParams& params, const Seq& s, int batch, int kv_head, int n0, int keys)
      : p(params), seq(s), b(batch), hk(kv_head), group(params.heads_q / params.heads_kv) {
    const BlockRange qb = seeing_query_blocks(p, seq, n0, keys, BM);
    mb_lo = qb.lo;
    blocks = qb.hi - qb.lo;
    steps = blocks * group;
  }
  __device__ int head(int step) const { return hk * group + step / blocks; }
  __device__ int m0(int step) const { return (mb_lo + step % blocks) * BM; }

  // The step's Q and dO rows into padded smem tiles by cp.async (all THREADS threads call it).
  __device__ void load_q_do(int step, T* sq, T* sdo) const {
    const int h = head(step), m = m0(step);
    const T* q = head_base<const T>(p, p.q, b, h, true) + int64_t(m) * p.q.row_stride;
    const T* d = head_base<const T>(p, p.dout, b, h, true) + int64_t(m) * p.dout.row_stride;
    load_tile<T, BM, HD, THREADS>(sq, q, p.q.row_stride, seq.q_len - m);
    load_tile<T, BM, HD, THREADS>(sdo, d, p.dout.row_stride, seq.q_len - m);
  }

  // Row r of the step's query block.
  __device__ RowStats row(int step, int r) const {
    RowStats s;
    const int i = m0(step) + r;
    if (i < seq.q_len) {
      const int64_t idx = lse_index(p, seq, head(step), i);
      s.lse = p.lse[idx];
      s.d = p.softmax_d[idx];
    }
    return s;
  }
};

}  // namespace attnrt::cuda::fa2
