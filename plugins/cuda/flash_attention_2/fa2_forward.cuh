// FlashAttention-2 forward (Dao 2023, Algorithm 1) on mma.sync tensor cores. One CTA computes
// BM query rows of one (sequence, head); each of its warps owns MT x 16 rows (MT m16 tiles that
// share every K and V fragment read from shared memory, FlashAttention-2's warp tiling) and walks
// the visible key blocks of BN keys with the online softmax, so no seqlen x seqlen matrix is
// ever stored. K and V tiles stream through shared memory with cp.async, each load overlapped
// with the other product (S = Q K^T while V lands, O += P V while the next K lands), and P is
// reused from the accumulators as the A operand of P V. What happens to the scores between the
// products (scale, softcap, mask, where each row's softmax starts and ends) is the score
// policy's (score_policy.cuh).
#pragma once

#include "fa2_query_block.cuh"

#include <attnrt_cuda/score_policy.cuh>
#include <attnrt_cuda/tile.cuh>
#include <attnrt_cuda/warp_gemm.cuh>

namespace attnrt::cuda::fa2 {

template <int HD, int BM, int BN, int MT>
struct ForwardTile {
  static_assert(HD % 16 == 0 && BN % 16 == 0 && BM % (16 * MT) == 0, "tiles are multiples of 16");
  static constexpr int kWarps = BM / (16 * MT);
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kStride = Padded<HD>::kStride;
  // Q fragments stay in registers while they fit beside the accumulators; else re-read per block.
  static constexpr bool kQInRegs = HD * MT <= 128 && BN <= 64;
  static constexpr size_t kSmemBytes = size_t(BM + 2 * BN) * kStride * 2;
};

template <class T, int HD, int BM, int BN, int MT, class Policy>
__global__ void __launch_bounds__(ForwardTile<HD, BM, BN, MT>::kThreads)
    forward_kernel(const AttentionParams p, const typename Policy::Params x) {
  using Tile = ForwardTile<HD, BM, BN, MT>;
  constexpr int S = Tile::kStride;
  extern __shared__ __align__(16) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem);
  T* sK = sQ + BM * S;
  T* sV = sK + BN * S;

  const QueryBlock qb = query_block<BM, BN, Policy>(p);
  if (qb.past_end()) return;
  const Seq& seq = qb.seq;
  const Policy pol(p, seq, x);
  const int b = qb.b, h = qb.h, hk = qb.hk, m0 = qb.m0, nb_hi = qb.keys.hi;
  // The first key block the policy visits (a block-sparse policy may skip some of the range).
  const int nb_lo = pol.first_block(m0, qb.keys.lo, nb_hi);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int w0 = warp * 16 * MT;  // this warp's first row in the CTA

  const T* q = head_base<const T>(p, p.q, b, h, true) + int64_t(m0) * p.q.row_stride;
  const T* k = head_base<const T>(p, p.k, b, hk, false);
  const T* v = head_base<const T>(p, p.v, b, hk, false);

  // Q and the first K, then the first V as a second group: the first S = Q K^T runs while V
  // lands (V issued inside the loop had its whole latency exposed once per CTA, which weighs
  // at short sequences, where a CTA walks 4-8 blocks).
  load_tile<T, BM, HD, Tile::kThreads>(sQ, q, p.q.row_stride, seq.q_len - m0);
  if (nb_hi > nb_lo) {
    load_tile<T, BN, HD, Tile::kThreads>(sK, k + int64_t(nb_lo) * BN * p.k.row_stride, p.k.row_stride,
                                         seq.k_len - nb_lo * BN);
  }
  cp_async_commit();
  if (nb_hi > nb_lo) {
    load_tile<T, BN, HD, Tile::kThreads>(sV, v + int64_t(nb_lo) * BN * p.v.row_stride, p.v.row_stride,
                                         seq.k_len - nb_lo * BN);
  }
  cp_async_commit();

  float o[MT][HD / 8][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int i = 0; i < HD / 8; ++i) o[mt][i][0] = o[mt][i][1] = o[mt][i][2] = o[mt][i][3] = 0.f;
  }

  uint32_t qf[Tile::kQInRegs ? MT : 1][Tile::kQInRegs ? HD / 16 : 1][4];
  const T* sQw = sQ + (w0 + (lane % 16)) * S + (lane / 16) * 8;  // this lane's ldmatrix row (tile 0)
  cp_async_wait<1>();                                            // Q and K[nb_lo]
  __syncthreads();
  if constexpr (Tile::kQInRegs) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk) ldmatrix_x4(qf[mt][kk], sQw + mt * 16 * S + kk * 16);
    }
  }

  // Scores stay raw (max taken on q.k, scale folded into the exponent's FFMA) when the policy's
  // map is linear with a positive scale; otherwise they are mapped to the log2 domain first.
  const bool fold = pol.linear();
  const float c = fold ? p.softmax_scale * kLog2e : 1.f;
  float row_max[MT][2], row_sum[MT][2];
  const RowStart start = pol.row_start(h, c);
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    row_max[mt][0] = row_max[mt][1] = start.max;
    // A row's sum is split over the four lanes of its quad (added up by quad_sum at the end):
    // the start's share (a sink's 1) goes to one of them.
    row_sum[mt][0] = row_sum[mt][1] = t == 0 ? start.sum : 0.f;
  }

  for (int nb = nb_lo, next; nb < nb_hi; nb = next) {
    next = pol.next_block(m0, nb, nb_hi);
    const int n0 = nb * BN;
    if (nb > nb_lo) {
      cp_async_wait<0>();  // K[nb] has landed
      __syncthreads();     // and every warp is done with V[nb - 1]
      load_tile<T, BN, HD, Tile::kThreads>(sV, v + int64_t(n0) * p.v.row_stride, p.v.row_stride, seq.k_len - n0);
      cp_async_commit();
    }

    float s[MT][BN / 8][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int i = 0; i < BN / 8; ++i) s[mt][i][0] = s[mt][i][1] = s[mt][i][2] = s[mt][i][3] = 0.f;
    }
    if constexpr (Tile::kQInRegs) {
      auto q_frags = [&](int kk, uint32_t(&f)[MT][4]) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
          for (int r = 0; r < 4; ++r) f[mt][r] = qf[mt][kk][r];
        }
      };
      gemm_xs<T, MT, HD, BN, Layout::kRowMajor, S>(s, q_frags, sK, lane);
    } else {
      gemm_ss<T, MT, HD, BN, Layout::kRowMajor, Layout::kRowMajor, S, S>(s, sQ + w0 * S, sK, lane);
    }

    // The mask only where the block crosses a boundary; masked scores are -inf in either domain.
    const bool need_mask = pol.tile_needs_mask(m0, BM, n0, BN);
    if (!fold) {
      pol.with_scores(h, [&](const auto& scores) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
          for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int i = m0 + w0 + mt * 16 + g + 8 * (e / 2), j = n0 + nt * 8 + 2 * t + e % 2;
              s[mt][nt][e] = scores.log2(s[mt][nt][e], i, j);
            }
          }
        }
      });
    }
    if constexpr (Policy::kElementMask) {  // flex_attention's mask_mod, in blocks that are not full
      if (pol.block_element_mask(m0, nb)) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
          for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int i = m0 + w0 + mt * 16 + g + 8 * (e / 2), j = n0 + nt * 8 + 2 * t + e % 2;
              if (!pol.visible(h, i, j)) s[mt][nt][e] = -INFINITY;
            }
          }
        }
      }
    }
    if (need_mask) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const auto row_keys = pol.row_mask(h, m0 + w0 + mt * 16 + g + 8 * r).shifted(n0 + 2 * t);
#pragma unroll
          for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              if (!row_keys.has(nt * 8 + e)) s[mt][nt][2 * r + e] = -INFINITY;
            }
          }
        }
      }
    }
    // Online softmax: P = exp2(s * c - max * c), one FFMA and one MUFU per score (computed
    // below, inside the P V product); first the new row maxima, and what was accumulated is
    // rescaled by exp2((old max - new max) * c), skipped (exactly: the factor
    // would be 1) when no row of this warp found a larger maximum, as it usually does not
    // once a few blocks are in.
    bool grew = false;
    float alpha[MT][2], neg_base[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = row_max[mt][r];
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * r], s[mt][nt][2 * r + 1]));
        mx = quad_max(mx);
        // A row with nothing visible yet keeps max -inf; its P is 0 and nothing is rescaled.
        neg_base[mt][r] = mx == -INFINITY ? 0.f : -mx * c;
        const bool row_grew = mx != row_max[mt][r];
        grew |= row_grew;
        alpha[mt][r] = row_grew ? fast_exp2(fmaf(row_max[mt][r], c, neg_base[mt][r])) : 1.f;
        row_max[mt][r] = mx;
        row_sum[mt][r] *= alpha[mt][r];
      }
    }
    if (__any_sync(0xffffffffu, grew)) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int dt = 0; dt < HD / 8; ++dt) {
          o[mt][dt][0] *= alpha[mt][0];
          o[mt][dt][1] *= alpha[mt][0];
          o[mt][dt][2] *= alpha[mt][1];
          o[mt][dt][3] *= alpha[mt][1];
        }
      }
    }

    cp_async_wait<0>();  // V[nb] has landed
    __syncthreads();     // and every warp is done with K[nb]
    if (next < nb_hi) {
      load_tile<T, BN, HD, Tile::kThreads>(sK, k + int64_t(next) * BN * p.k.row_stride, p.k.row_stride,
                                           seq.k_len - next * BN);
    }
    cp_async_commit();

    // O += P V with the exponentials computed slice by slice as the A operand: they and the
    // products form one basic block after the barrier, so ptxas fills the tensor-core issue
    // gaps with the MUFU/FFMA work (FlashAttention-2's order; with the exponentials before
    // the barrier every P V product waited out its fixed latency, ncu: docs/perf.md step 16).
    float sum[MT][2] = {};  // this block's row sums, added to the running ones once, not per term
    auto p_frags = [&](int kk, uint32_t(&f)[MT][4]) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int nt = 2 * kk; nt < 2 * kk + 2; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][nt][e] = fast_exp2(fmaf(s[mt][nt][e], c, neg_base[mt][e / 2]));
          sum[mt][0] += s[mt][nt][0] + s[mt][nt][1];
          sum[mt][1] += s[mt][nt][2] + s[mt][nt][3];
        }
        accum_to_a<T>(f[mt], s[mt][2 * kk], s[mt][2 * kk + 1]);
      }
    };
    gemm_xs<T, MT, BN, HD, Layout::kTransposed, S>(o, p_frags, sV, lane);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      row_sum[mt][0] += sum[mt][0];
      row_sum[mt][1] += sum[mt][1];
    }
  }

  // Epilogue: normalize, write out and lse (rows past the sequence are not written). O goes
  // through this warp's own rows of sQ (a warp reads only its own Q rows, so no barrier), and
  // leaves in 16-byte chunks of whole rows rather than 4-byte pairs of 8 rows.
  T* out = head_base<T>(p, p.out, b, h, true);
  T* sO = sQ + w0 * S;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const RowEnd end = pol.row_end(row_max[mt][r], quad_sum(row_sum[mt][r]), c);
      const float inv = end.inv();
      const int row = mt * 16 + g + 8 * r;
#pragma unroll
      for (int dt = 0; dt < HD / 8; ++dt) {
        *reinterpret_cast<uint32_t*>(sO + row * S + dt * 8 + 2 * t) =
            pack2<T>(o[mt][dt][2 * r] * inv, o[mt][dt][2 * r + 1] * inv);
      }
      const int i = m0 + w0 + row;
      if (p.lse && t == 0 && i < seq.q_len) p.lse[lse_index(p, seq, h, i)] = end.lse();
    }
  }
  __syncwarp();
  constexpr int kChunks = HD / 8, kRows = 16 * MT;
  static_assert(kRows * kChunks % 32 == 0, "whole passes of the warp");
#pragma unroll
  for (int pass = 0; pass < kRows * kChunks / 32; ++pass) {
    const int chunk = pass * 32 + lane, row = chunk / kChunks, col = (chunk % kChunks) * 8;
    const int i = m0 + w0 + row;
    if (i < seq.q_len) {
      *reinterpret_cast<uint4*>(out + int64_t(i) * p.out.row_stride + col) =
          *reinterpret_cast<const uint4*>(sO + row * S + col);
    }
  }
}

}  // namespace attnrt::cuda::fa2
