// FlashAttention-3 forward (Shah et al. 2024, Algorithm 1) on Hopper: TMA loads, wgmma on
// shared-memory operands, warp specialization. A CTA of three warpgroups owns BM = 128 query
// rows of one (sequence, head): warpgroup 0 is the producer, one thread of which issues every
// TMA load (Q once, then K and V blocks into a ring of kStages buffers guarded by mbarriers);
// warpgroups 1 and 2 are consumers of 64 rows each, S = Q K^T by wgmma from shared memory, the
// online softmax in registers, O += P V by wgmma with P straight from the S accumulators (the
// register operand) and V read transposed from shared memory. Registers move from the producer
// to the consumers with setmaxnreg. What happens to the scores between the products (scale,
// softcap, mask, where each row's softmax starts and ends) is the score policy's
// (score_policy.cuh), as in flash_attention_2: one policy, two mainloops.
#pragma once

#include "fa3_launch.hpp"

#include <attnrt_cuda/hopper/gmma.cuh>
#include <attnrt_cuda/hopper/tma.cuh>
#include <attnrt_cuda/score_policy.cuh>
#include <attnrt_cuda/tile.cuh>
#include <attnrt_cuda/warp_mma.cuh>

#include <cuda.h>

namespace attnrt::cuda::fa3 {

template <int HD>
struct ForwardConfig : ForwardTiles<HD> {
  static constexpr int kStages = 2;
  static constexpr int kThreads = 384;  // a producer warpgroup and two consumer warpgroups
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
};

template <class T, int HD, int BM, int BN, int STAGES>
struct ForwardSmem {
  static_assert(HD % hopper::kChunkCols == 0, "head_dim a multiple of the 64-column swizzle chunk");
  alignas(1024) T q[BM * HD];
  alignas(1024) T k[STAGES][BN * HD];
  alignas(1024) T v[STAGES][BN * HD];
  alignas(8) uint64_t q_full;
  uint64_t k_full[STAGES], v_full[STAGES], k_empty[STAGES], v_empty[STAGES];
};

// The TMA coordinates of a sequence's rows: token offset (varlen: its first packed row) and
// batch index (0 when packed).
struct SeqCoords {
  int row0, batch;
};

__device__ __forceinline__ SeqCoords q_coords(const AttentionParams& p, int b) {
  return p.cu_seqlens_q ? SeqCoords{p.cu_seqlens_q[b], 0} : SeqCoords{0, b};
}
__device__ __forceinline__ SeqCoords k_coords(const AttentionParams& p, int b) {
  return p.cu_seqlens_k ? SeqCoords{p.cu_seqlens_k[b], 0} : SeqCoords{0, b};
}

template <class T, int HD, class Policy, bool kPingpong>
__global__ void __launch_bounds__(ForwardConfig<HD>::kThreads, 1)
    forward_kernel(const __grid_constant__ AttentionParams p, const __grid_constant__ CUtensorMap tma_q,
                   const __grid_constant__ CUtensorMap tma_k, const __grid_constant__ CUtensorMap tma_v) {
  using C = ForwardConfig<HD>;
  constexpr int BM = C::kBM, BN = C::kBN, STAGES = C::kStages;
  using Smem = ForwardSmem<T, HD, BM, BN, STAGES>;
  // The swizzled tiles need 1024-byte alignment, which dynamic shared memory does not promise:
  // the launch adds 1 KB of slack.
  extern __shared__ unsigned char smem_raw[];
  Smem& sm = *reinterpret_cast<Smem*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

  // Last query blocks first (the longest under a causal mask), as flash_attention_2.
  const int b = static_cast<int>(blockIdx.z), h = static_cast<int>(blockIdx.y);
  const int hk = h / (p.heads_q / p.heads_kv);
  const Seq seq = sequence(p, b);
  const int m0 = static_cast<int>(gridDim.x - 1 - blockIdx.x) * BM;
  if (m0 >= seq.q_len) return;  // the whole CTA: varlen grids cover the longest sequence
  const Policy pol(p, seq);
  const BlockRange keys = pol.key_blocks(m0, BM, BN);
  const int n_blocks = keys.hi - keys.lo;

  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (threadIdx.x == 0) {
    hopper::TxBarrier::init(&sm.q_full, 1);
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      hopper::TxBarrier::init(&sm.k_full[s], 1);
      hopper::TxBarrier::init(&sm.v_full[s], 1);
      hopper::Barrier::init(&sm.k_empty[s], 8);  // one arrival per consumer warp
      hopper::Barrier::init(&sm.v_empty[s], 8);
    }
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---- Producer: one thread issues every load; the block's other 127 threads idle on few
    // registers.
    cutlass::arch::warpgroup_reg_dealloc<C::kProducerRegs>();
    if (threadIdx.x != 0) return;
    hopper::prefetch_tensor_map(&tma_q);
    hopper::prefetch_tensor_map(&tma_k);
    hopper::prefetch_tensor_map(&tma_v);
    const SeqCoords qc = q_coords(p, b), kc = k_coords(p, b);
    constexpr uint32_t kQBytes = BM * HD * sizeof(T), kKVBytes = BN * HD * sizeof(T);
    hopper::TxBarrier::arrive_and_expect_tx(&sm.q_full, kQBytes);
#pragma unroll
    for (int c = 0; c < HD / 64; ++c) {
      hopper::tma_load_4d(&tma_q, &sm.q_full, sm.q + c * BM * 64, c * 64, qc.row0 + m0, h, qc.batch);
    }
    for (int it = 0; it < n_blocks; ++it) {
      const int stage = it % STAGES;
      const uint32_t phase = (it / STAGES) & 1;
      const int n0 = (keys.hi - 1 - it) * BN;  // last blocks first: the masked ones
      hopper::Barrier::wait(&sm.k_empty[stage], phase ^ 1);
      hopper::TxBarrier::arrive_and_expect_tx(&sm.k_full[stage], kKVBytes);
#pragma unroll
      for (int c = 0; c < HD / 64; ++c) {
        hopper::tma_load_4d(&tma_k, &sm.k_full[stage], sm.k[stage] + c * BN * 64, c * 64, kc.row0 + n0, hk, kc.batch);
      }
      hopper::Barrier::wait(&sm.v_empty[stage], phase ^ 1);
      hopper::TxBarrier::arrive_and_expect_tx(&sm.v_full[stage], kKVBytes);
#pragma unroll
      for (int c = 0; c < HD / 64; ++c) {
        hopper::tma_load_4d(&tma_v, &sm.v_full[stage], sm.v[stage] + c * BN * 64, c * 64, kc.row0 + n0, hk, kc.batch);
      }
    }
    return;
  }

  // ---- Consumers: warpgroup 1 or 2, rows wr0 .. +64 of the block; in it, warp w holds rows
  // 16 w + g and 16 w + g + 8 (g = lane / 4) of every accumulator, columns 8 i + 2 t, +1.
  cutlass::arch::warpgroup_reg_alloc<C::kConsumerRegs>();
  const int cw = warpgroup - 1;
  const int wr0 = cw * 64;
  const int warp = (static_cast<int>(threadIdx.x) % 128) / 32, g = lane / 4, t = lane % 4;
  const int row_in_block = wr0 + warp * 16 + g;  // and + 8

  using GemmS = hopper::Gemm<T, BN>;
  using GemmO = hopper::Gemm<T, HD>;
  float o[HD / 8][4];
#pragma unroll
  for (int i = 0; i < HD / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float(&o_flat)[HD / 2] = reinterpret_cast<float(&)[HD / 2]>(o);
  float s[BN / 8][4];
  float(&s_flat)[BN / 2] = reinterpret_cast<float(&)[BN / 2]>(s);
  uint32_t pa[BN / 16][4];

  const bool fold = pol.linear();
  const float c = fold ? p.softmax_scale * kLog2e : 1.f;
  const RowStart start = pol.row_start(h, c);
  float row_max[2] = {start.max, start.max};
  float row_sum[2] = {t == 0 ? start.sum : 0.f, t == 0 ? start.sum : 0.f};
  float alpha[2];

  // Ping-pong (FlashAttention-3, section 3.1): the two consumer warpgroups take turns issuing
  // their GEMMs, ordered by two named barriers, so one's softmax (exp on the SFUs) runs while the
  // other's products hold the tensor cores. Each issue point syncs on its own barrier and then
  // releases the other warpgroup's; warpgroup 2 opens with one release so warpgroup 1 goes first,
  // and skips its very last release so that every barrier sees whole generations.
  const int issue_points = n_blocks + 1;  // S_0, then S_j with P_(j-1) V_(j-1), then the last P V
  int issued = 0;
  auto turn_begin = [&] {
    if constexpr (kPingpong) cutlass::arch::NamedBarrier::sync(256, 3 + cw);
  };
  auto turn_end = [&] {
    ++issued;
    if constexpr (kPingpong) {
      if (cw == 0 || issued < issue_points) cutlass::arch::NamedBarrier::arrive(256, 3 + (1 - cw));
    }
  };
  if constexpr (kPingpong) {
    if (cw == 1 && n_blocks > 0) cutlass::arch::NamedBarrier::arrive(256, 3);
  }

  auto issue_s = [&](int stage) {
    hopper::fence_operands(s_flat);
#pragma unroll
    for (int ks = 0; ks < HD / 16; ++ks) {
      GemmS::ss(hopper::k_major_desc<BM>(sm.q, wr0, ks), hopper::k_major_desc<BN>(sm.k[stage], 0, ks), s_flat, ks > 0);
    }
    cute::warpgroup_commit_batch();
  };
  auto issue_pv = [&](int stage) {
    hopper::fence_operands(o_flat);
#pragma unroll
    for (int ks = 0; ks < BN / 16; ++ks) GemmO::rs(pa[ks], hopper::mn_major_desc<BN>(sm.v[stage], ks), o_flat);
    cute::warpgroup_commit_batch();
  };

  // Scores, mask and the online softmax of block n0 in s: new row maxima, the factor alpha that
  // rescales what was accumulated (applied by the caller once the P V product in flight is done),
  // P = exp2(s * c - max * c) in place, and the row sums.
  auto softmax = [&](int n0) {
    if (!fold) {
      pol.with_scores(h, [&](const auto& scores) {
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int i = m0 + row_in_block + 8 * (e / 2), j = n0 + nt * 8 + 2 * t + e % 2;
            s[nt][e] = scores.log2(s[nt][e], i, j);
          }
        }
      });
    }
    if (pol.tile_needs_mask(m0 + wr0, 64, n0, BN)) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const auto row_keys = pol.row_mask(h, m0 + row_in_block + 8 * r).shifted(n0 + 2 * t);
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            if (!row_keys.has(nt * 8 + e)) s[nt][2 * r + e] = -INFINITY;
          }
        }
      }
    }
    float neg_base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = row_max[r];
#pragma unroll
      for (int nt = 0; nt < BN / 8; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
      mx = quad_max(mx);
      // A row with nothing visible yet keeps max -inf; its P is 0 and nothing is rescaled.
      neg_base[r] = mx == -INFINITY ? 0.f : -mx * c;
      alpha[r] = mx != row_max[r] ? fast_exp2(fmaf(row_max[r], c, neg_base[r])) : 1.f;
      row_max[r] = mx;
      row_sum[r] *= alpha[r];
    }
#pragma unroll
    for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] = fast_exp2(fmaf(s[nt][e], c, neg_base[e / 2]));
      row_sum[0] += s[nt][0] + s[nt][1];
      row_sum[1] += s[nt][2] + s[nt][3];
    }
  };
  auto rescale_o = [&] {
#pragma unroll
    for (int dt = 0; dt < HD / 8; ++dt) {
      o[dt][0] *= alpha[0];
      o[dt][1] *= alpha[0];
      o[dt][2] *= alpha[1];
      o[dt][3] *= alpha[1];
    }
  };
  auto to_p = [&] {
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) accum_to_a<T>(pa[kk], s[2 * kk], s[2 * kk + 1]);
  };

  // Intra-warpgroup overlap (FlashAttention-3, section 3.2): S_j = Q K_j^T is issued together with
  // O += P_(j-1) V_(j-1), and the softmax of S_j runs while that product is still in flight;
  // only the rescale of O waits for it. Blocks run last first (the masked ones).
  hopper::TxBarrier::wait(&sm.q_full, 0);
  if (n_blocks > 0) {
    hopper::TxBarrier::wait(&sm.k_full[0], 0);
    turn_begin();
    cute::warpgroup_arrive();
    issue_s(0);
    turn_end();
    cute::warpgroup_wait<0>();
    hopper::fence_operands(s_flat);
    if (lane == 0) hopper::Barrier::arrive(&sm.k_empty[0]);
    softmax((keys.hi - 1) * BN);
    to_p();
  }
  for (int it = 1; it < n_blocks; ++it) {
    const int stage = it % STAGES, prev = (it - 1) % STAGES;
    const uint32_t phase = (it / STAGES) & 1, prev_phase = ((it - 1) / STAGES) & 1;
    hopper::TxBarrier::wait(&sm.k_full[stage], phase);
    hopper::TxBarrier::wait(&sm.v_full[prev], prev_phase);
    turn_begin();
    cute::warpgroup_arrive();
    issue_s(stage);
    issue_pv(prev);
    turn_end();
    cute::warpgroup_wait<1>();  // S_j has landed; P_(j-1) V_(j-1) may still run
    hopper::fence_operands(s_flat);
    if (lane == 0) hopper::Barrier::arrive(&sm.k_empty[stage]);
    softmax((keys.hi - 1 - it) * BN);
    cute::warpgroup_wait<0>();
    hopper::fence_operands(o_flat);
    hopper::fence_operands(pa);
    if (lane == 0) hopper::Barrier::arrive(&sm.v_empty[prev]);
    rescale_o();
    to_p();
  }
  if (n_blocks > 0) {
    const int last = (n_blocks - 1) % STAGES;
    hopper::TxBarrier::wait(&sm.v_full[last], ((n_blocks - 1) / STAGES) & 1);
    turn_begin();
    cute::warpgroup_arrive();
    issue_pv(last);
    turn_end();
    cute::warpgroup_wait<0>();
    hopper::fence_operands(o_flat);
    hopper::fence_operands(pa);
    if (lane == 0) hopper::Barrier::arrive(&sm.v_empty[last]);
  }

  // Epilogue: normalize, then O through this warpgroup's own rows of the Q tile (no other
  // warpgroup reads them, and its last S = Q K^T has completed) in the same swizzle, so the
  // warps' 4-byte writes are free of bank conflicts, and out in 16-byte chunks of whole rows.
  T* sO = sm.q;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const RowEnd end = pol.row_end(row_max[r], quad_sum(row_sum[r]), c);
    const float inv = end.inv();
    const int row = row_in_block + 8 * r;
#pragma unroll
    for (int dt = 0; dt < HD / 8; ++dt) {
      const int chunk = dt / 8, unit = (dt % 8) ^ (row % 8);
      *reinterpret_cast<uint32_t*>(sO + chunk * BM * 64 + row * 64 + unit * 8 + 2 * t) =
          pack2<T>(o[dt][2 * r] * inv, o[dt][2 * r + 1] * inv);
    }
    const int i = m0 + row;
    if (p.lse && t == 0 && i < seq.q_len) p.lse[lse_index(p, seq, h, i)] = end.lse();
  }
  cutlass::arch::NamedBarrier::sync(128, 1 + cw);  // this warpgroup's rows are written
  T* out = head_base<T>(p, p.out, b, h, true);
  const int tid = static_cast<int>(threadIdx.x) % 128;
  constexpr int kUnits = HD / 8;  // 16-byte units per row
#pragma unroll
  for (int pass = 0; pass < 64 * kUnits / 128; ++pass) {
    const int u = pass * 128 + tid, row = wr0 + u / kUnits, col_unit = u % kUnits;
    const int i = m0 + row;
    if (i < seq.q_len) {
      const int chunk = col_unit / 8, unit = (col_unit % 8) ^ (row % 8);
      *reinterpret_cast<uint4*>(out + int64_t(i) * p.out.row_stride + col_unit * 8) =
          *reinterpret_cast<const uint4*>(sO + chunk * BM * 64 + row * 64 + unit * 8);
    }
  }
}

}  // namespace attnrt::cuda::fa3
