// dK, dV and (unless deterministic) dQ for head_dim <= 128: FlashAttention-2's backward CTA.
// One CTA of 8 warps per block of 128 keys of one kv head walks every visible block of BM
// queries (128 up to head_dim 64, else 64) of every q head of its GQA group. Per step, with
// warp w:
//   S^T = K Q^T and dP^T = V dO^T: keys 32 (w % 4) ..+32 x queries (w / 4) half;
//     P^T = exp(S^T - lse) and dS^T = P^T (dP^T - D) go to shared memory.
//   dV += P^T dO and dK += dS^T Q: keys 32 (w % 4) ..+32 x head_dim columns (w / 4) half.
//   dQ += dS K: a block of query rows x columns, added to the fp32 buffer by 16-byte reductions.
// Every product is a warp tile of at least 32 rows, so each B fragment feeds two or more m16
// tiles: 0.45 fragment loads per mma at head_dim 128, against 0.56 for warps of 16 keys that
// each form their own P and dS; those re-read all of Q and dO per warp and left the kernel
// bound by shared-memory bandwidth (docs/perf.md). Staging dQ in shared memory for sm_90's bulk
// reduce-add instead of atomics measured no faster (docs/perf.md, step 11).
// The tiles take up to 182 KB of shared memory, which only sm_90 has (227 KB per CTA; A100 163 KB):
// elsewhere the launcher runs dkdv_split_kernel, and this kernel is compiled as a trap.
#pragma once

#include <attnrt_cuda/backward_rows.cuh>
#include <attnrt_cuda/query_walk.cuh>

#include <attnrt_cuda/score_policy.cuh>
#include <attnrt_cuda/warp_gemm.cuh>

namespace attnrt::cuda::fa2 {

template <int HD, bool kDq>
struct DkDvTile {
  static constexpr int kBN = 128;                  // keys per CTA
  static constexpr int kBM = HD <= 64 ? 128 : 64;  // queries per step: enough products per barrier
  static constexpr int kWarps = 8, kThreads = kWarps * 32;
  static constexpr int kStride = Padded<HD>::kStride;
  static constexpr int kPStride = Padded<kBM>::kStride;  // P^T and dS^T: kBN rows of kBM queries
  static constexpr int kSCols = kBM / 2;                 // S^T / dP^T warp tile: 32 keys x kSCols queries
  static constexpr int kDkDvCols = HD / 2;               // dK / dV warp tile: 32 keys x kDkDvCols
  // dQ warp tile: kDqRows x kDqCols, the squarest split of kBM x HD over the warps with at
  // least 16 columns (one ldmatrix.x4 of B) each: 32 x 32 at head_dim 64 and 128.
  static constexpr int kDqColWarps = HD == 128 ? 4 : 2;
  static constexpr int kDqCols = HD / kDqColWarps;
  static constexpr int kDqRows = kBM / (kWarps / kDqColWarps);
  static_assert(HD <= 128 && HD % 32 == 0 && kDkDvCols % 16 == 0 && kDqCols % 16 == 0 && kDqRows % 16 == 0,
                "warp tiles (dQ's in pairs of n8 tiles, for the 16-byte reductions)");
  // K, V: kBN rows; Q and dO: two buffers of kBM rows; P^T and dS^T; lse and D: two buffers.
  static constexpr size_t kSmemBytes =
      size_t(2 * kBN + 4 * kBM) * kStride * 2 + size_t(2 * kBN) * kPStride * 2 + 4 * kBM * sizeof(float);
  static_assert(kSmemBytes <= 227 * 1024, "fits sm_90's shared memory per CTA");
};

template <class T, int HD, bool kDq, class Policy>
__global__ void __launch_bounds__(DkDvTile<HD, kDq>::kThreads)
    dkdv_kernel(const AttentionParams p, const typename Policy::Params x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // unreachable: the launcher takes dkdv_split_kernel below sm_90
#else
  using Tile = DkDvTile<HD, kDq>;
  constexpr int BN = Tile::kBN, BM = Tile::kBM, S = Tile::kStride, SP = Tile::kPStride;
  constexpr Layout kRow = Layout::kRowMajor, kTrans = Layout::kTransposed;
  extern __shared__ __align__(16) unsigned char smem[];
  T* sK = reinterpret_cast<T*>(smem);
  T* sV = sK + BN * S;
  T* sQ = sV + BN * S;                                    // [2][BM][S]
  T* sdO = sQ + 2 * BM * S;                               // [2][BM][S]
  T* sP = sdO + 2 * BM * S;                               // [BN][SP]: P^T
  T* sdS = sP + BN * SP;                                  // [BN][SP]: dS^T
  float* sLse = reinterpret_cast<float*>(sdS + BN * SP);  // [2][BM], log2 domain
  float* sD = sLse + 2 * BM;                              // [2][BM]

  const int n_block = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const Seq seq = sequence(p, b);
  const int n0 = n_block * BN;
  if (n0 >= seq.k_len) return;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int key_w = (warp % 4) * 32;               // this warp's keys, relative to n0
  const int query_w = (warp / 4) * Tile::kSCols;   // its queries in S^T, relative to the step's m0
  const int col_w = (warp / 4) * Tile::kDkDvCols;  // its dK/dV columns
  const Policy pol(p, seq, x);
  const QueryWalk<T, HD, BM, Tile::kThreads> walk(p, seq, pol.query_blocks(n0, BN, BM), b, hk);

  const T* k = head_base<const T>(p, p.k, b, hk, false) + int64_t(n0) * p.k.row_stride;
  const T* v = head_base<const T>(p, p.v, b, hk, false) + int64_t(n0) * p.v.row_stride;
  load_tile<T, BN, HD, Tile::kThreads>(sK, k, p.k.row_stride, seq.k_len - n0);
  load_tile<T, BN, HD, Tile::kThreads>(sV, v, p.v.row_stride, seq.k_len - n0);

  // Thread r < BM fetches row r's lse and D into registers a step ahead and stores them to shared
  // memory at the end of the step before: the two warps that fetch them would otherwise stall
  // on global memory while the rest wait at the barrier.
  auto fetch_rows = [&](QueryStep st) { return threadIdx.x < BM ? walk.row(st, threadIdx.x) : RowStats{}; };
  auto store_rows = [&](const RowStats& r, int buf) {
    if (threadIdx.x < BM) {
      sLse[buf * BM + threadIdx.x] = r.lse_log2();
      sD[buf * BM + threadIdx.x] = r.d;
    }
  };
  // `step` counts the walk's steps, `it` those taken (the buffers alternate on it): a block-sparse
  // policy's skipped steps are passed over (QueryWalk::visited).
  int step = 0;
  QueryStep cur = walk.visited(pol, n0, walk.first(), step);
  if (step < walk.steps) {
    store_rows(fetch_rows(cur), 0);
    walk.load_q_do(cur, sQ, sdO);
  }
  cp_async_commit();

  float dk[2][Tile::kDkDvCols / 8][4], dv[2][Tile::kDkDvCols / 8][4];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
    for (int i = 0; i < Tile::kDkDvCols / 8; ++i) {
#pragma unroll
      for (int e = 0; e < 4; ++e) dk[mt][i][e] = dv[mt][i][e] = 0.f;
    }
  }

  for (int it = 0; step < walk.steps; ++it) {
    const int buf = it % 2;
    cp_async_wait<0>();
    __syncthreads();  // step's tiles landed; every warp is done with the other buffer, P^T and dS^T
    // The next step's lse/D loads go first: cp.async reads its address registers late, and a
    // branch right after it waited on them (ncu: long-scoreboard stalls on that branch).
    int next_step = step + 1;
    const QueryStep nxt = walk.visited(pol, n0, walk.next(cur), next_step);
    RowStats next_rows;
    if (next_step < walk.steps) {
      next_rows = fetch_rows(nxt);
      walk.load_q_do(nxt, sQ + (1 - buf) * BM * S, sdO + (1 - buf) * BM * S);
    }
    cp_async_commit();
    const int m0 = cur.m0;
    const T* q = sQ + buf * BM * S;
    const T* dO = sdO + buf * BM * S;
    const float* lse = sLse + buf * BM + query_w;
    const float* dd = sD + buf * BM + query_w;

    constexpr int kN8 = Tile::kSCols / 8;
    float s[2][kN8][4], dp[2][kN8][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
      for (int i = 0; i < kN8; ++i) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][i][e] = dp[mt][i][e] = 0.f;
      }
    }
    gemm_ss<T, 2, HD, Tile::kSCols, kRow, kRow, S, S>(s, sK + key_w * S, q + query_w * S, lane);
    gemm_ss<T, 2, HD, Tile::kSCols, kRow, kRow, S, S>(dp, sV + key_w * S, dO + query_w * S, lane);
    // P^T = exp(S^T - lse) and dS^T = P^T (dP^T - D) (times the softcap factor) to shared memory,
    // masked only where the tile crosses a boundary.
    pol.with_scores(cur.head, [&](const auto& scores) {
      // The policy's per-element predicate (flex's mask_mod) is one more reason to mask a tile.
      const bool element_mask = Policy::kElementMask && pol.tile_element_mask(cur.head, m0, n0);
      with_flag(pol.tile_needs_mask(m0, BM, n0, BN) || element_mask, [&](auto mask) {
        constexpr bool kMask = decltype(mask)::value;
        // Each query column's lse and D are read once, into registers: the compiler cannot tell
        // the P^T / dS^T stores from these loads, so reading them per element re-read them
        // after every store (4x the shared-memory loads).
        decltype(pol.col_mask(0, 0)) queries[2][2];
        if constexpr (kMask) {
#pragma unroll
          for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              queries[mt][r] = pol.col_mask(cur.head, n0 + key_w + mt * 16 + g + 8 * r).shifted(m0 + query_w + 2 * t);
            }
          }
        }
#pragma unroll
        for (int nt = 0; nt < kN8; ++nt) {
          const float2 lse2 = *reinterpret_cast<const float2*>(lse + nt * 8 + 2 * t);
          const float2 d2 = *reinterpret_cast<const float2*>(dd + nt * 8 + 2 * t);
#pragma unroll
          for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              float pr[2], ds[2];
#pragma unroll
              for (int c = 0; c < 2; ++c) {
                const float raw = s[mt][nt][2 * r + c];
                const int i = m0 + query_w + nt * 8 + 2 * t + c, j = n0 + key_w + mt * 16 + g + 8 * r;
                pr[c] = fast_exp2(scores.log2(raw, i, j) - (c ? lse2.y : lse2.x));
                if (kMask && !queries[mt][r].has(nt * 8 + c)) pr[c] = 0.f;
                if constexpr (Policy::kElementMask && kMask) {
                  if (element_mask && !pol.visible(cur.head, i, j)) pr[c] = 0.f;
                }
                ds[c] = pr[c] * (dp[mt][nt][2 * r + c] - (c ? d2.y : d2.x)) * scores.grad(raw, i, j);
              }
              const int at = (key_w + mt * 16 + g + 8 * r) * SP + query_w + nt * 8 + 2 * t;
              *reinterpret_cast<uint32_t*>(sP + at) = pack2<T>(pr[0], pr[1]);
              *reinterpret_cast<uint32_t*>(sdS + at) = pack2<T>(ds[0], ds[1]);
            }
          }
        }
      });
    });
    __syncthreads();  // P^T and dS^T complete
    // dV += P^T dO; then dQ += dS K, added to the fp32 buffer while dK += dS^T Q runs.
    gemm_ss<T, 2, BM, Tile::kDkDvCols, kRow, kTrans, SP, S>(dv, sP + key_w * SP, dO + col_w, lane);
    if constexpr (kDq) {
      // Rows of dS are columns of dS^T.
      constexpr int kMT = Tile::kDqRows / 16, kN8 = Tile::kDqCols / 8;
      const int row_q = (warp / Tile::kDqColWarps) * Tile::kDqRows;
      const int col_q = (warp % Tile::kDqColWarps) * Tile::kDqCols;
      float acc[kMT][kN8][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
        for (int i = 0; i < kN8; ++i) {
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[mt][i][e] = 0.f;
        }
      }
      gemm_ss<T, kMT, BN, Tile::kDqCols, kTrans, kTrans, SP, S>(acc, sdS + row_q, sK + col_q, lane);
      // dQ goes out in 16-byte vector reductions: lanes t and t^1 swap halves of a pair of n8
      // tiles, so even lanes hold columns 2t..2t+3 of the first and odd lanes 2t-2..2t+1 of the
      // second. Every reduction of a thread is then one base address plus a constant (dq_accum
      // rows are consecutive in i, lse_index). They are spread over the dK product's steps (one
      // or two per step), not issued back to back; each change measured: issued after dK they
      // held their registers into the next step (long-scoreboard stalls), 16 float2 atomics in a
      // burst filled the memory queue (lg-throttle stalls); float4 halved the count
      // (docs/perf.md, step 12). Only a block that crosses the sequence's end checks rows.
      const int i0 = m0 + row_q + g;
      const bool odd = t & 1;
      float* dq_row = p.dq_accum + lse_index(p, seq, cur.head, i0) * HD + col_q + 2 * t + (odd ? 8 - 2 : 0);
      constexpr int kAdds = kMT * 2 * (kN8 / 2), kSteps = (BM / 16) * (Tile::kDkDvCols / 16);
      with_flag(m0 + BM > seq.q_len, [&](auto partial) {
        auto add_dq = [&](int step) {
#pragma unroll
          for (int a = step * kAdds / kSteps; a < (step + 1) * kAdds / kSteps; ++a) {
            const int mt = a / kN8, r = (a / (kN8 / 2)) % 2, j = a % (kN8 / 2);
            const float(&lo)[4] = acc[mt][2 * j];
            const float(&hi)[4] = acc[mt][2 * j + 1];
            const float rx = __shfl_xor_sync(0xffffffffu, odd ? lo[2 * r] : hi[2 * r], 1);
            const float ry = __shfl_xor_sync(0xffffffffu, odd ? lo[2 * r + 1] : hi[2 * r + 1], 1);
            if (decltype(partial)::value && i0 + mt * 16 + 8 * r >= seq.q_len) continue;
            atomic_add4(dq_row + (mt * 16 + 8 * r) * HD + j * 16, odd ? make_float4(rx, ry, hi[2 * r], hi[2 * r + 1])
                                                                      : make_float4(lo[2 * r], lo[2 * r + 1], rx, ry));
          }
        };
        gemm_ss<T, 2, BM, Tile::kDkDvCols, kRow, kTrans, SP, S>(dk, sdS + key_w * SP, q + col_w, lane, add_dq);
      });
    } else {
      gemm_ss<T, 2, BM, Tile::kDkDvCols, kRow, kTrans, SP, S>(dk, sdS + key_w * SP, q + col_w, lane);
    }
    store_rows(next_rows, 1 - buf);  // read after the next barrier
    cur = nxt;
    step = next_step;
  }

  // Keys past the sequence are not written; a key no query sees gets zeros.
  T* dk_out = head_base<T>(p, p.dk, b, hk, false) + col_w;
  T* dv_out = head_base<T>(p, p.dv, b, hk, false) + col_w;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int j = n0 + key_w + mt * 16 + g + 8 * r;
      if (j >= seq.k_len) continue;
      store_accum_row<T>(dk_out + int64_t(j) * p.dk.row_stride, dk[mt], r, t, p.softmax_scale);
      store_accum_row<T>(dv_out + int64_t(j) * p.dv.row_stride, dv[mt], r, t, 1.0f);
    }
  }
#endif
}

}  // namespace attnrt::cuda::fa2
