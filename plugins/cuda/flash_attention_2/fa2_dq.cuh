// The deterministic path's dQ pass: every dQ element has one writer, so repeats are bit-identical.
#pragma once

#include <attnrt_cuda/backward_rows.cuh>
#include "fa2_query_block.cuh"

#include <attnrt_cuda/score_policy.cuh>
#include <attnrt_cuda/warp_gemm.cuh>

namespace attnrt::cuda::fa2 {

template <int HD, int BM, int BN>
struct DqTile {
  static constexpr int kWarps = BM / 16;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kStride = Padded<HD>::kStride;
  // Q and dO: BM rows; K and V: two buffers of BN rows each (the next block loads meanwhile).
  static constexpr size_t kSmemBytes = size_t(2 * BM + 4 * BN) * kStride * 2;
};

template <class T, int HD, int BM, int BN, class Policy>
__global__ void __launch_bounds__(DqTile<HD, BM, BN>::kThreads) dq_kernel(const AttentionParams p) {
  using Tile = DqTile<HD, BM, BN>;
  constexpr int S = Tile::kStride;
  extern __shared__ __align__(16) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem);
  T* sdO = sQ + BM * S;
  T* sK = sdO + BM * S;     // [2][BN][S]
  T* sV = sK + 2 * BN * S;  // [2][BN][S]

  const QueryBlock qb = query_block<BM, BN, Policy>(p);
  if (qb.past_end()) return;
  const Seq& seq = qb.seq;
  const Policy pol(p, seq);
  const int b = qb.b, h = qb.h, hk = qb.hk, m0 = qb.m0, nb_lo = qb.keys.lo, nb_hi = qb.keys.hi;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  const T* q = head_base<const T>(p, p.q, b, h, true) + int64_t(m0) * p.q.row_stride;
  const T* dO = head_base<const T>(p, p.dout, b, h, true) + int64_t(m0) * p.dout.row_stride;
  const T* k = head_base<const T>(p, p.k, b, hk, false);
  const T* v = head_base<const T>(p, p.v, b, hk, false);
  load_tile<T, BM, HD, Tile::kThreads>(sQ, q, p.q.row_stride, seq.q_len - m0);
  load_tile<T, BM, HD, Tile::kThreads>(sdO, dO, p.dout.row_stride, seq.q_len - m0);
  if (nb_hi > nb_lo) {
    load_tile<T, BN, HD, Tile::kThreads>(sK, k + int64_t(nb_lo) * BN * p.k.row_stride, p.k.row_stride,
                                         seq.k_len - nb_lo * BN);
    load_tile<T, BN, HD, Tile::kThreads>(sV, v + int64_t(nb_lo) * BN * p.v.row_stride, p.v.row_stride,
                                         seq.k_len - nb_lo * BN);
  }
  cp_async_commit();

  const int row_i[2] = {m0 + warp * 16 + g, m0 + warp * 16 + g + 8};
  float lse[2], dd[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    lse[r] = INFINITY;
    dd[r] = 0.f;
    if (row_i[r] < seq.q_len) {
      const int64_t idx = lse_index(p, seq, h, row_i[r]);
      if (p.lse[idx] != -INFINITY) lse[r] = p.lse[idx] * kLog2e;
      dd[r] = p.softmax_d[idx];
    }
  }
  float dq[HD / 8][4];
#pragma unroll
  for (int i = 0; i < HD / 8; ++i) dq[i][0] = dq[i][1] = dq[i][2] = dq[i][3] = 0.f;

  constexpr Layout kRow = Layout::kRowMajor;
  const T* sQw = sQ + warp * 16 * S;  // this warp's queries
  const T* sdOw = sdO + warp * 16 * S;

  for (int nb = nb_lo; nb < nb_hi; ++nb) {
    const int n0 = nb * BN;
    const int buf = (nb - nb_lo) % 2;
    cp_async_wait<0>();
    __syncthreads();  // K[nb], V[nb] landed; every warp is done with the other buffer
    if (nb + 1 < nb_hi) {
      load_tile<T, BN, HD, Tile::kThreads>(sK + (1 - buf) * BN * S, k + int64_t(n0 + BN) * p.k.row_stride,
                                           p.k.row_stride, seq.k_len - n0 - BN);
      load_tile<T, BN, HD, Tile::kThreads>(sV + (1 - buf) * BN * S, v + int64_t(n0 + BN) * p.v.row_stride,
                                           p.v.row_stride, seq.k_len - n0 - BN);
    }
    cp_async_commit();
    const T* kt = sK + buf * BN * S;
    const T* vt = sV + buf * BN * S;

    float s[BN / 8][4], dp[BN / 8][4];
#pragma unroll
    for (int i = 0; i < BN / 8; ++i) {
      s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
      dp[i][0] = dp[i][1] = dp[i][2] = dp[i][3] = 0.f;
    }
    gemm_ss<T, 1, HD, BN, kRow, kRow, S, S>(one_tile(s), sQw, kt, lane);
    gemm_ss<T, 1, HD, BN, kRow, kRow, S, S>(one_tile(dp), sdOw, vt, lane);
    const bool need_mask = pol.tile_needs_mask(m0, BM, n0, BN);
    const auto row_keys0 = pol.row_mask(h, row_i[0]).shifted(n0 + 2 * t);
    const auto row_keys1 = pol.row_mask(h, row_i[1]).shifted(n0 + 2 * t);
    pol.with_scores(h, [&](const auto& scores) {
#pragma unroll
      for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float raw = s[nt][e];
          const int i = row_i[e / 2], j = n0 + nt * 8 + 2 * t + e % 2;
          float pr = fast_exp2(scores.log2(raw, i, j) - lse[e / 2]);
          if (need_mask && !(e / 2 ? row_keys1 : row_keys0).has(nt * 8 + e % 2)) pr = 0.f;
          dp[nt][e] = pr * (dp[nt][e] - dd[e / 2]) * scores.grad(raw, i, j);
        }
      }
    });
    // dQ += dS K.
    gemm_accum_smem<T, BN, HD, S>(dq, dp, kt, lane);
  }

  T* dq_out = head_base<T>(p, p.dq, b, h, true);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row_i[r];
    if (i >= seq.q_len) continue;
    store_accum_row<T>(dq_out + int64_t(i) * p.dq.row_stride, dq, r, t, p.softmax_scale);
  }
}

}  // namespace attnrt::cuda::fa2
