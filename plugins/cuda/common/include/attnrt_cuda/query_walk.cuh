// What the dK/dV kernels (flash_attention_2's two, flash_attention_3's) share: the (q head, query
// block) steps one CTA of a key block walks (every block of BM queries that sees the keys, as the
// score policy's query_blocks gives them, of every q head of the kv head's GQA group,
// head-major), the loads of a step's Q and dO tiles, and its rows' lse and D.
#pragma once

#include <attnrt_cuda/tile.cuh>

namespace attnrt::cuda {

// A query row's lse and D (FlashAttention-2, Algorithm 2), as the forward and softmax_d_kernel
// wrote them. Rows past the sequence keep the defaults: as if the row saw no key.
struct RowStats {
  float lse = -INFINITY, d = 0.f;
  // lse in the log2 domain of the kernels' exp2; +inf where no key is visible, so P = 0.
  __device__ __forceinline__ float lse_log2() const { return lse == -INFINITY ? INFINITY : lse * kLog2e; }
};

// One step of the walk: q head `head`, query rows m0 ..+BM.
struct QueryStep {
  int head = 0, m0 = 0;
};

template <class T, int HD, int BM, int THREADS>
struct QueryWalk {
  const AttentionParams& p;
  const Seq& seq;
  int m_lo = 0, m_hi = 0, steps = 0, head0 = 0;
  const T* q = nullptr;  // (token 0, head 0) of the sequence
  const T* dout = nullptr;

  // `qb`: the blocks of BM queries that see the CTA's keys.
  __device__ QueryWalk(const AttentionParams& params, const Seq& s, BlockRange qb, int batch, int kv_head)
      : p(params), seq(s) {
    const int group = p.heads_q / p.heads_kv;
    m_lo = qb.lo * BM;
    m_hi = qb.hi * BM;
    steps = (qb.hi - qb.lo) * group;
    head0 = kv_head * group;
    q = head_base<const T>(p, p.q, batch, 0, true);
    dout = head_base<const T>(p, p.dout, batch, 0, true);
  }
  // Steps advance by counters: a division per step (step / blocks) and head_base's reads of
  // cu_seqlens cost ~150 instructions per warp per step, all issued right after a barrier.
  __device__ QueryStep first() const { return {head0, m_lo}; }
  __device__ QueryStep next(QueryStep s) const {
    s.m0 += BM;
    if (s.m0 >= m_hi) {
      s.m0 = m_lo;
      ++s.head;
    }
    return s;
  }

  // `st` if the policy visits it for the keys at n0, else the first step after it that it does:
  // a block-sparse policy (flex's block mask) skips steps that see nothing, which are then
  // neither loaded nor computed. `step` (st's index in the walk) advances with it, to `steps`
  // when none is left. The other policies skip none.
  template <class Policy>
  __device__ QueryStep visited(const Policy& pol, int n0, QueryStep st, int& step) const {
    if constexpr (Policy::kElementMask) {
      while (step < steps && pol.tile_skipped(st.head, st.m0, n0)) {
        st = next(st);
        ++step;
      }
    }
    return st;
  }

  // The step's Q and dO rows into padded smem tiles by cp.async (all THREADS threads call it).
  __device__ void load_q_do(QueryStep s, T* sq, T* sdo) const {
    load_tile<T, BM, HD, THREADS>(sq, q + int64_t(s.head) * p.q.head_stride + int64_t(s.m0) * p.q.row_stride,
                                  p.q.row_stride, seq.q_len - s.m0);
    load_tile<T, BM, HD, THREADS>(sdo, dout + int64_t(s.head) * p.dout.head_stride + int64_t(s.m0) * p.dout.row_stride,
                                  p.dout.row_stride, seq.q_len - s.m0);
  }

  // Row r of the step's query block.
  __device__ RowStats row(QueryStep s, int r) const {
    RowStats st;
    const int i = s.m0 + r;
    if (i < seq.q_len) {
      const int64_t idx = lse_index(p, seq, s.head, i);
      st.lse = p.lse[idx];
      st.d = p.softmax_d[idx];
    }
    return st;
  }
};

}  // namespace attnrt::cuda
