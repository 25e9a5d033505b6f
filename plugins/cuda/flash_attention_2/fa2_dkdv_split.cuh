// dK/dV for head dims above 128, where a 32-key warp tile's dK and dV accumulators would not
// fit in registers (fa2_dkdv.cuh): 4 warps of 16 keys each, and the work in two passes
// (dV only, then dK and, unless deterministic, dQ), each recomputing P.
#pragma once

#include <attnrt_cuda/backward_rows.cuh>
#include <attnrt_cuda/query_walk.cuh>

#include <attnrt_cuda/score_policy.cuh>
#include <attnrt_cuda/warp_gemm.cuh>

namespace attnrt::cuda::fa2 {

enum class DkDv { kDvOnly, kDkOnly };

template <int HD, int BN, int BM, bool kDq = false>
struct SplitDkDvTile {
  static constexpr int kWarps = BN / 16;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kStride = Padded<HD>::kStride;
  // dS^T for the dQ product: BN rows of BM queries, padded like the other tiles.
  static constexpr int kDsStride = Padded<BM>::kStride;
  // dQ work per step: BM / 16 row groups, each split over the remaining warps by columns, in
  // chunks of kDqChunk columns so that the chunk's accumulators fit beside dK and dV.
  static constexpr int kDqRowGroups = BM / 16;
  static constexpr int kDqColSplit = kWarps / kDqRowGroups;
  static constexpr int kDqCols = HD / kDqColSplit;
  static constexpr int kDqChunk = kDqCols % 64 == 0 ? 64 : kDqCols % 48 == 0 ? 48 : kDqCols % 32 == 0 ? 32 : 16;
  static_assert(kWarps % kDqRowGroups == 0 && HD % kDqColSplit == 0 && kDqCols % 16 == 0, "dQ warp split");
  // K, V: BN rows; Q and dO: two buffers of BM rows; lse and D: two buffers of BM floats; dS^T.
  static constexpr size_t kSmemBytes =
      size_t(2 * BN + 4 * BM) * kStride * 2 + 4 * BM * sizeof(float) + (kDq ? size_t(BN) * kDsStride * 2 : 0);
};

template <class T, int HD, int BN, int BM, DkDv kMode, bool kDq, class Policy>
__global__ void __launch_bounds__(SplitDkDvTile<HD, BN, BM, kDq>::kThreads)
    dkdv_split_kernel(const AttentionParams p, const typename Policy::Params x) {
  using Tile = SplitDkDvTile<HD, BN, BM, kDq>;
  constexpr int S = Tile::kStride, SD = Tile::kDsStride;
  constexpr bool kDv = kMode != DkDv::kDkOnly, kDk = kMode != DkDv::kDvOnly;
  static_assert(!kDq || kDk, "dQ needs dS, which the dK pass forms");
  static_assert(BM <= Tile::kThreads, "one thread per query row fetches lse and D");
  extern __shared__ __align__(16) unsigned char smem[];
  T* sK = reinterpret_cast<T*>(smem);
  T* sV = sK + BN * S;
  T* sQ = sV + BN * S;                                       // [2][BM][S]
  T* sdO = sQ + 2 * BM * S;                                  // [2][BM][S]
  float* sLse = reinterpret_cast<float*>(sdO + 2 * BM * S);  // [2][BM], log2 domain
  float* sD = sLse + 2 * BM;                                 // [2][BM]
  T* sdS = reinterpret_cast<T*>(sD + 2 * BM);                // [BN][SD], dS^T

  const int n_block = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const Seq seq = sequence(p, b);
  const int n0 = n_block * BN;
  if (n0 >= seq.k_len) return;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const Policy pol(p, seq, x);
  const QueryWalk<T, HD, BM, Tile::kThreads> walk(p, seq, pol.query_blocks(n0, BN, BM), b, hk);

  const T* k = head_base<const T>(p, p.k, b, hk, false) + int64_t(n0) * p.k.row_stride;
  const T* v = head_base<const T>(p, p.v, b, hk, false) + int64_t(n0) * p.v.row_stride;
  load_tile<T, BN, HD, Tile::kThreads>(sK, k, p.k.row_stride, seq.k_len - n0);
  if (kDk) load_tile<T, BN, HD, Tile::kThreads>(sV, v, p.v.row_stride, seq.k_len - n0);

  auto load_step = [&](QueryStep st, int buf) {
    walk.load_q_do(st, sQ + buf * BM * S, sdO + buf * BM * S);
    if (threadIdx.x < BM) {
      const RowStats r = walk.row(st, threadIdx.x);
      sLse[buf * BM + threadIdx.x] = r.lse_log2();
      sD[buf * BM + threadIdx.x] = r.d;
    }
  };
  // `step` counts the walk's steps, `it` those taken (the buffers alternate on it): a block-sparse
  // policy's skipped steps are passed over (QueryWalk::visited).
  int step = 0;
  QueryStep cur = walk.visited(pol, n0, walk.first(), step);
  if (step < walk.steps) load_step(cur, 0);
  cp_async_commit();

  float dk[kDk ? HD / 8 : 1][4], dv[kDv ? HD / 8 : 1][4];
#pragma unroll
  for (int i = 0; i < (kDk ? HD / 8 : 1); ++i) dk[i][0] = dk[i][1] = dk[i][2] = dk[i][3] = 0.f;
#pragma unroll
  for (int i = 0; i < (kDv ? HD / 8 : 1); ++i) dv[i][0] = dv[i][1] = dv[i][2] = dv[i][3] = 0.f;

  constexpr Layout kRow = Layout::kRowMajor, kTrans = Layout::kTransposed;
  const T* sKw = sK + warp * 16 * S;  // this warp's keys
  const T* sVw = sV + warp * 16 * S;
  const int key_j[2] = {n0 + warp * 16 + g, n0 + warp * 16 + g + 8};

  for (int it = 0; step < walk.steps; ++it) {
    const int buf = it % 2;
    cp_async_wait<0>();
    __syncthreads();  // step's tiles landed; every warp is done with the other buffer
    int next_step = step + 1;
    const QueryStep nxt = walk.visited(pol, n0, walk.next(cur), next_step);
    if (next_step < walk.steps) load_step(nxt, 1 - buf);
    cp_async_commit();
    const int m0 = cur.m0;
    const T* q = sQ + buf * BM * S;
    const T* dO = sdO + buf * BM * S;
    const float* lse = sLse + buf * BM;
    const float* dd = sD + buf * BM;

    // S^T = K Q^T for this warp's 16 keys.
    float s[BM / 8][4];
#pragma unroll
    for (int i = 0; i < BM / 8; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
    gemm_ss<T, 1, HD, BM, kRow, kRow, S, S>(one_tile(s), sKw, q, lane);
    // P^T (and the softcap factor, kept in s's place until dS^T is formed).
    const bool need_mask = pol.tile_needs_mask(m0, BM, n0, BN);
    float capg[kDk ? BM / 8 : 1][4];
    pol.with_scores(cur.head, [&](const auto& scores) {
#pragma unroll
      for (int nt = 0; nt < BM / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = nt * 8 + 2 * t + (e % 2);
          const float raw = s[nt][e];
          const int i = m0 + col, j = key_j[e / 2];
          if constexpr (kDk) capg[nt][e] = scores.grad(raw, i, j);
          s[nt][e] = fast_exp2(scores.log2(raw, i, j) - lse[col]);
        }
      }
    });
    if (need_mask) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const auto queries = pol.col_mask(cur.head, key_j[r]).shifted(m0 + 2 * t);
#pragma unroll
        for (int nt = 0; nt < BM / 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            if (!queries.has(nt * 8 + e)) s[nt][2 * r + e] = 0.f;
          }
        }
      }
    }
    if constexpr (Policy::kElementMask) {
      if (pol.tile_element_mask(cur.head, m0, n0)) {  // the policy's predicate (flex's mask_mod)
#pragma unroll
        for (int nt = 0; nt < BM / 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            if (!pol.visible(cur.head, m0 + nt * 8 + 2 * t + (e % 2), key_j[e / 2])) s[nt][e] = 0.f;
          }
        }
      }
    }
    if constexpr (kDv) {
      // dV += P^T dO.
      gemm_accum_smem<T, BM, HD, S>(dv, s, dO, lane);
    }
    if constexpr (kDk) {
      // dP^T = V dO^T, then dS^T = P^T (dP^T - D) * softcap factor.
      float dp[BM / 8][4];
#pragma unroll
      for (int i = 0; i < BM / 8; ++i) dp[i][0] = dp[i][1] = dp[i][2] = dp[i][3] = 0.f;
      gemm_ss<T, 1, HD, BM, kRow, kRow, S, S>(one_tile(dp), sVw, dO, lane);
#pragma unroll
      for (int nt = 0; nt < BM / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = nt * 8 + 2 * t + (e % 2);
          dp[nt][e] = s[nt][e] * (dp[nt][e] - dd[col]) * capg[nt][e];
        }
      }
      if constexpr (kDq) {
        // dS^T to shared memory (as T, the precision of the dQ product's operand) for dQ below.
#pragma unroll
        for (int nt = 0; nt < BM / 8; ++nt) {
          T* row = sdS + (warp * 16 + g) * SD + nt * 8 + 2 * t;
          *reinterpret_cast<uint32_t*>(row) = pack2<T>(dp[nt][0], dp[nt][1]);
          *reinterpret_cast<uint32_t*>(row + 8 * SD) = pack2<T>(dp[nt][2], dp[nt][3]);
        }
      }
      // dK += dS^T Q.
      gemm_accum_smem<T, BM, HD, S>(dk, dp, q, lane);
    }
    if constexpr (kDq) {
      // dQ (rows of this step's head and query block) += dS K, read back from every warp's
      // dS^T; each warp adds its 16 rows x kDqCols columns into the fp32 buffer.
      __syncthreads();
      const int h = cur.head;
      const int rg = warp % Tile::kDqRowGroups, c0 = (warp / Tile::kDqRowGroups) * Tile::kDqCols;
      const int row_i[2] = {m0 + rg * 16 + g, m0 + rg * 16 + g + 8};
      float* dq_row[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        dq_row[r] = row_i[r] < seq.q_len ? p.dq_accum + lse_index(p, seq, h, row_i[r]) * HD + c0 + 2 * t : nullptr;
      }
#pragma unroll
      for (int cc = 0; cc < Tile::kDqCols; cc += Tile::kDqChunk) {
        float acc[Tile::kDqChunk / 8][4];
#pragma unroll
        for (int i = 0; i < Tile::kDqChunk / 8; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
        gemm_ss<T, 1, BN, Tile::kDqChunk, kTrans, kTrans, SD, S>(one_tile(acc), sdS + rg * 16, sK + c0 + cc, lane);
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          if (!dq_row[r]) continue;
#pragma unroll
          for (int nt = 0; nt < Tile::kDqChunk / 8; ++nt) {
            atomic_add2(dq_row[r] + cc + nt * 8, acc[nt][2 * r], acc[nt][2 * r + 1]);
          }
        }
      }
    }
    cur = nxt;
    step = next_step;
  }

  // Keys past the sequence are not written; a key no query sees gets zeros.
  T* dk_out = head_base<T>(p, p.dk, b, hk, false);
  T* dv_out = head_base<T>(p, p.dv, b, hk, false);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int j = key_j[r];
    if (j >= seq.k_len) continue;
    if constexpr (kDk) store_accum_row<T>(dk_out + int64_t(j) * p.dk.row_stride, dk, r, t, p.softmax_scale);
    if constexpr (kDv) store_accum_row<T>(dv_out + int64_t(j) * p.dv.row_stride, dv, r, t, 1.0f);
  }
}

}  // namespace attnrt::cuda::fa2
