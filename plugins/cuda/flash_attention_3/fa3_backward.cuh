// FlashAttention-3 backward (Shah et al. 2024, section 3 and Appendix B.1; FlashAttention-2's
// Algorithm 2 on Hopper's machinery). P is recomputed from q, k and the forward's lse, after
// D = rowsum(dO * O) (softmax_d_kernel, attnrt_cuda/backward_rows.cuh). A CTA of three
// warpgroups owns BN = 128 keys of one kv head and walks every visible block of BM queries of
// every q head of its GQA group (query_walk.cuh), so dK and dV have one writer each:
//   - warpgroup 0 is the producer: one warp loads K and V once and then, per step, the Q and dO
//     tiles by TMA and the rows' lse and D by plain loads into a ring of kStages buffers;
//   - warpgroups 1 and 2 own keys 0 ..64 and 64 ..128. Per step, by wgmma:
//       S^T = K Q^T and dP^T = V dO^T                     (shared-memory operands)
//       P^T = exp(S^T - lse), dS^T = P^T (dP^T - D)        (registers; the score policy's map,
//                                                           mask and derivative)
//       dV += P^T dO and dK += dS^T Q                      (P^T and dS^T from registers)
//       dQ += dS K                                         (dS^T through shared memory)
//     dS^T goes to shared memory because each dQ row needs all 128 keys, which live in two
//     warpgroups: after a barrier between them, each forms half of the step's dQ (hd 64: 64 of
//     the 128 query rows; hd 128: 64 of the 128 columns) and stores it into a shared fp32 tile;
//   - a second producer warp adds that tile to the fp32 accumulator in global memory with one
//     bulk reduction (cp.reduce.async.bulk, as FlashAttention-3 does) while the consumers go on,
//     where each consumer thread's vector atomics (one L2 transaction per 32-byte sector) held
//     the backward at 0.70-0.79x cuDNN. dq_convert_kernel scales and rounds the accumulator
//     (swizzled, dq_swizzled_pair) into dq.
// Deterministic calls (p.dq_semaphore set) fix the order of those additions, as FlashAttention-3's
// deterministic mode does: the writer adds a (q head, query block)'s tile only once every key
// block before its own that visits those rows has added its own (a counter per query block in
// the workspace), then waits for its addition to complete and counts it. Key blocks of a (kv
// head, sequence) pair have increasing block indices (backward_tile), so the CTAs a writer waits
// for were dispatched before it.
#pragma once

#include "fa3_forward.cuh"
#include "fa3_launch.hpp"

#include <attnrt_cuda/backward_rows.cuh>
#include <attnrt_cuda/hopper/gmma.cuh>
#include <attnrt_cuda/hopper/tma.cuh>
#include <attnrt_cuda/query_walk.cuh>
#include <attnrt_cuda/score_policy.cuh>
#include <attnrt_cuda/tile.cuh>
#include <attnrt_cuda/warp_mma.cuh>

#include <cuda.h>

namespace attnrt::cuda::fa3 {

template <int HD>
struct BackwardConfig : BackwardTiles<HD> {
  static constexpr int kStages = 2;
  static constexpr int kThreads = 384;  // a producer warpgroup and two consumer warpgroups
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
  // Each consumer warpgroup's share of a step's dQ = dS K is one m64 x n64 product: rows when
  // the query block is 128 (head_dim 64), columns when head_dim is 128 (a 64-query block).
  static constexpr bool kDqSplitsRows = BackwardTiles<HD>::kBM == 128;
  // Whether a step's elementwise work runs under its products (P^T under dP^T, dS^T under dV).
  // It keeps P^T's fp32 tile and its fragments live beside dP^T's: at head_dim 128 (64-query
  // steps) that fits the consumers' registers and was 2-6% faster (H100, bench/results/
  // fa3-backward-2026-11-25/); at 64 (128-query steps, twice the tiles) ptxas spilled 340 bytes a
  // thread and the step ran 25% slower, so there each slice's dS^T follows its P^T.
  static constexpr bool kOverlap = HD >= 128;
  static_assert(kDqSplitsRows ? HD == 64 : (BackwardTiles<HD>::kBM == 64 && HD == 128),
                "dQ's split covers the block exactly");
};

// Steps one CTA of a block-sparse walk may have (query blocks times the GQA group): 16384, 128k
// queries of a group of 8 at 64 queries a step (flex_attention's Hopper path refuses more).
inline constexpr int kMaxSparseSteps = 16384;

template <class T, int HD, int BM, int BN, int STAGES, bool kSparse = false>
struct BackwardSmem {
  alignas(1024) T k[BN * HD];
  alignas(1024) T v[BN * HD];
  alignas(1024) T q[STAGES][BM * HD];
  alignas(1024) T dout[STAGES][BM * HD];
  alignas(1024) T ds[2][BN * BM];  // dS^T, keys x queries, by step parity
  alignas(128) float dq[BM * HD];  // the step's dQ, dq_accum's rows and swizzle
  float lse[STAGES][BM];           // log2 domain; +inf past the sequence (P = 0)
  float dd[STAGES][BM];            // D
  alignas(8) uint64_t kv_full;
  uint64_t q_full[STAGES], q_empty[STAGES];
  uint64_t dq_full, dq_empty;
  // Block-sparse walks: the stage's step (its q head and first row), for the consumers; one bit
  // per step of the CTA's walk, set where the block mask visits it.
  int step_head[STAGES], step_m0[STAGES];
  uint32_t visited[kSparse ? kMaxSparseSteps / 32 : 1];
};

// The CTA of a linear block index: (kv head, sequence) pairs in bands of `band`, and in a band
// key block by key block, so that the CTAs in flight at once hold every pair of one band (whose
// Q and dO the launch sizes to stay in L2) and a band's first key blocks, which a causal mask
// gives the most queries, start first (longest first): a causal grid then ends on short CTAs.
// A band of 1 is one pair's key blocks in order, then the next pair's.
struct BackwardTile {
  int n_block, hk, b;
};
__device__ __forceinline__ BackwardTile backward_tile(const AttentionParams& p, int n_blocks, int band) {
  const int linear = static_cast<int>(blockIdx.x);
  const int pairs = p.heads_kv * p.batch;
  const int band_index = linear / (band * n_blocks), first = band_index * band;
  const int width = min(band, pairs - first);
  const int in_band = linear - first * n_blocks;
  const int pair = first + in_band % width;
  return {in_band / width, pair % p.heads_kv, pair / p.heads_kv};
}

// The first key block (of `block_n` keys) whose walk visits query block `m` (of `block_m` rows),
// among blocks 0 .. n, n being one that visits it. The key blocks visiting a query block are
// contiguous and the policy's query_blocks(n).hi grows with n (an interval mask), so a binary
// search over the same function the walks use finds it.
template <class Policy>
__device__ __forceinline__ int first_key_block(const Policy& pol, int m, int n, int block_n, int block_m) {
  int lo = 0, hi = n;  // the answer lies in [lo, hi]
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    const BlockRange qb = pol.query_blocks(mid * block_n, block_n, block_m);
    if (qb.hi > qb.lo && qb.hi > m) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

__device__ __forceinline__ int ld_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void st_release(int* p, int v) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// The kernel's body, for backward_kernel below and for kernels defined around it elsewhere
// (flex_attention's Hopper path), as forward_body. A block-sparse policy (kElementMask: flex's
// block masks) skips the steps whose tile its block mask skips, in every role alike, and asks its
// per-element predicate in the tiles it marks partial. Every warp of the CTA first reads the
// block mask's states of 32 steps at a time into a bitmask in shared memory, which the producer
// warps then scan (each role reading the states in turn, QueryWalk::visited as flash_attention_2's
// walk does, left a sliding window's backward at 0.6x PyTorch's); the consumers take each visited
// step's query block from the stage the producer fills for it.
template <class T, int HD, class Policy>
__device__ __forceinline__ void backward_body(const AttentionParams& p, const CUtensorMap& tma_q,
                                              const CUtensorMap& tma_k, const CUtensorMap& tma_v,
                                              const CUtensorMap& tma_do, const typename Policy::Params& x, int band) {
  using C = BackwardConfig<HD>;
  constexpr int BM = C::kBM, BN = C::kBN, STAGES = C::kStages;
  constexpr bool kSparse = Policy::kElementMask;
  using Smem = BackwardSmem<T, HD, BM, BN, STAGES, kSparse>;
  extern __shared__ unsigned char smem_raw[];
  Smem& sm = hopper::aligned_shared<Smem>(smem_raw);

  const BackwardTile tile = backward_tile(p, ceil_div(p.seqlen_k, BN), band);
  const int n_block = tile.n_block, hk = tile.hk, b = tile.b;
  const Seq seq = sequence(p, b);
  const int n0 = n_block * BN;
  if (n0 >= seq.k_len) return;
  const Policy pol = make_policy<Policy>(p, seq, x, b);
  const QueryWalk<T, HD, BM, 32> walk(p, seq, pol.query_blocks(n0, BN, BM), b, hk);

  // Through a shuffle from lane 0 so that the compiler knows it is warp-uniform (CUTLASS's
  // canonical_warp_group_idx): the wgmma descriptors formed from it stay in uniform registers.
  const int warpgroup = __shfl_sync(~0u, static_cast<int>(threadIdx.x) / 128, 0);
  const int lane = static_cast<int>(threadIdx.x) % 32;

  // The walk's steps in order (QueryWalk::next's: query blocks, then q heads), each role visiting
  // the same ones: all, or (block-sparse) those whose bit is set.
  const int m_steps = (walk.m_hi - walk.m_lo) / BM;
  auto step_at = [&](int step) { return QueryStep{walk.head0 + step / m_steps, walk.m_lo + step % m_steps * BM}; };
  auto next_visited = [&](int step) {  // the first visited step at or after `step`, else walk.steps
    while (step < walk.steps) {
      const uint32_t word = sm.visited[step >> 5] >> (step & 31);
      if (word) return step + __ffs(static_cast<int>(word)) - 1;
      step = (step | 31) + 1;
    }
    return walk.steps;
  };
  struct Visit {
    int step;
    QueryStep st;
  };
  auto first_visit = [&] {
    if constexpr (kSparse) {
      const int step = next_visited(0);
      return Visit{step, step < walk.steps ? step_at(step) : QueryStep{}};
    } else {
      return Visit{0, walk.first()};
    }
  };
  auto next_visit = [&](Visit v) {
    if constexpr (kSparse) {
      // The next step by the walk's counters where none is skipped, else from its index (a
      // division, only after a skip).
      const int step = next_visited(v.step + 1);
      if (step == v.step + 1) return Visit{step, walk.next(v.st)};
      return Visit{step, step < walk.steps ? step_at(step) : QueryStep{}};
    } else {
      return Visit{v.step + 1, walk.next(v.st)};
    }
  };
  if constexpr (kSparse) {
    const int warp_id = static_cast<int>(threadIdx.x) / 32, warps = static_cast<int>(blockDim.x) / 32;
    for (int word = warp_id; word * 32 < walk.steps; word += warps) {
      const int step = word * 32 + lane;
      bool seen = false;
      if (step < walk.steps) {
        const QueryStep st = step_at(step);
        seen = !pol.tile_skipped(st.head, st.m0, n0);
      }
      const uint32_t bits = __ballot_sync(~0u, seen);
      if (lane == 0) sm.visited[word] = bits;
    }
  }

  if (threadIdx.x == 0) {
    hopper::TxBarrier::init(&sm.kv_full, 1);
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      hopper::TxBarrier::init(&sm.q_full[s], 32);  // the producer warp's lanes: lse and D rows
      hopper::Barrier::init(&sm.q_empty[s], 256);  // every consumer thread: its own lse/D reads
    }
    hopper::Barrier::init(&sm.dq_full, 256);  // every consumer thread: its own dQ stores
    hopper::Barrier::init(&sm.dq_empty, 1);   // the writer, once the bulk copy has read the tile
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---- Producer: warp 0; lane 0 issues the TMA loads, every lane fetches rows' lse and D.
    // Warp 1 adds each step's dQ tile to dq_accum.
    cutlass::arch::warpgroup_reg_dealloc<C::kProducerRegs>();
    if (threadIdx.x >= 64) return;
    if (threadIdx.x >= 32) {
      if (lane != 0) return;
      int it = 0;
      for (Visit v = first_visit(); v.step < walk.steps; v = next_visit(v), ++it) {
        const QueryStep st = v.st;
        int* turn = nullptr;
        int before = 0;  // key blocks that add to these rows before this one (deterministic)
        if (p.dq_semaphore) {
          turn = p.dq_semaphore + (int64_t(b) * p.heads_q + st.head) * ceil_div(p.seqlen_q, BM) + st.m0 / BM;
          before = n_block - first_key_block(pol, st.m0 / BM, n_block, BN, BM);
        }
        hopper::Barrier::wait(&sm.dq_full, it & 1);
        if (turn) {
          while (ld_acquire(turn) != before) __nanosleep(32);
          hopper::fence_proxy_async_global();
        }
        // Rows past the sequence are not added: they belong to the next head or sequence.
        const int rows = min(BM, seq.q_len - st.m0);
        hopper::bulk_reduce_add_f32(p.dq_accum + lse_index(p, seq, st.head, st.m0) * HD, sm.dq,
                                    static_cast<uint32_t>(rows * HD * sizeof(float)));
        hopper::bulk_commit();
        if (turn) {
          hopper::bulk_wait();  // the addition is complete in global memory, then counted
          hopper::fence_proxy_async_global();
          st_release(turn, before + 1);
        } else {
          hopper::bulk_wait_read();
        }
        hopper::Barrier::arrive(&sm.dq_empty);
      }
      hopper::bulk_wait();
      return;
    }
    const SeqCoords qc = q_coords(p, b), kc = k_coords(p, b);
    constexpr uint32_t kKVBytes = 2 * BN * HD * sizeof(T), kStepBytes = 2 * BM * HD * sizeof(T);
    if (walk.steps == 0) return;  // no query sees these keys: the consumers write zeros
    if (lane == 0) {
      hopper::prefetch_tensor_map(&tma_q);
      hopper::prefetch_tensor_map(&tma_do);
      hopper::TxBarrier::arrive_and_expect_tx(&sm.kv_full, kKVBytes);
#pragma unroll
      for (int c = 0; c < HD / 64; ++c) {
        hopper::tma_load_4d(&tma_k, &sm.kv_full, sm.k + c * BN * 64, c * 64, kc.row0 + n0, hk, kc.batch);
        hopper::tma_load_4d(&tma_v, &sm.kv_full, sm.v + c * BN * 64, c * 64, kc.row0 + n0, hk, kc.batch);
      }
    }
    int it = 0;
    for (Visit v = first_visit(); v.step < walk.steps; v = next_visit(v), ++it) {
      const QueryStep st = v.st;
      const int stage = it % STAGES;
      hopper::Barrier::wait(&sm.q_empty[stage], ((it / STAGES) & 1) ^ 1);
      for (int r = lane; r < BM; r += 32) {
        const RowStats rows = walk.row(st, r);
        sm.lse[stage][r] = rows.lse_log2();
        sm.dd[stage][r] = rows.d;
      }
      if (lane == 0) {
        if constexpr (kSparse) {
          sm.step_head[stage] = st.head;
          sm.step_m0[stage] = st.m0;
        }
        hopper::TxBarrier::arrive_and_expect_tx(&sm.q_full[stage], kStepBytes);
#pragma unroll
        for (int c = 0; c < HD / 64; ++c) {
          hopper::tma_load_4d(&tma_q, &sm.q_full[stage], sm.q[stage] + c * BM * 64, c * 64, qc.row0 + st.m0, st.head,
                              qc.batch);
          hopper::tma_load_4d(&tma_do, &sm.q_full[stage], sm.dout[stage] + c * BM * 64, c * 64, qc.row0 + st.m0,
                              st.head, qc.batch);
        }
      } else {
        hopper::Barrier::arrive(&sm.q_full[stage]);  // releases this lane's rows
      }
    }
    return;
  }

  // ---- Consumers: warpgroup 1 or 2, keys kr0 .. +64 of the block; in it, warp w holds keys
  // 16 w + g and 16 w + g + 8 (g = lane / 4) of every accumulator, columns 8 i + 2 t, +1.
  cutlass::arch::warpgroup_reg_alloc<C::kConsumerRegs>();
  const int cw = warpgroup - 1;
  const int kr0 = cw * 64;
  const int warp = (static_cast<int>(threadIdx.x) % 128) / 32, g = lane / 4, t = lane % 4;
  const int key_in_block = kr0 + warp * 16 + g;  // and + 8

  using GemmS = hopper::Gemm<T, BM>;  // S^T, dP^T: 64 keys x BM queries
  using GemmD = hopper::Gemm<T, HD>;  // dV, dK: 64 keys x head_dim
  using GemmQ = hopper::Gemm<T, 64>;  // this warpgroup's half of dQ
  float dv[HD / 8][4], dk[HD / 8][4];
#pragma unroll
  for (int i = 0; i < HD / 8; ++i) {
#pragma unroll
    for (int e = 0; e < 4; ++e) dv[i][e] = dk[i][e] = 0.f;
  }
  float(&dv_flat)[HD / 2] = reinterpret_cast<float(&)[HD / 2]>(dv);
  float(&dk_flat)[HD / 2] = reinterpret_cast<float(&)[HD / 2]>(dk);
  // This warpgroup's dQ: rows dq_row0 .. +64 of the step's block (dS^T's 64-query chunk
  // dq_row0 / 64, the A operand) x columns dq_col0 .. +64 (K's chunk dq_col0 / 64, the B operand).
  const int dq_row0 = C::kDqSplitsRows ? kr0 : 0, dq_col0 = C::kDqSplitsRows ? 0 : kr0;
  const T* k_chunk = sm.k + dq_col0 * BN;

  if (walk.steps > 0) hopper::TxBarrier::wait(&sm.kv_full, 0);
  // Block-sparse walks loop over their visited steps by count, each step's query block named by
  // the producer in its stage, so the consumers neither scan the bitmask nor keep the walk's
  // counters. The count goes through a shuffle from lane 0 (CUTLASS's canonical_warp_idx_sync
  // idiom) so that the compiler knows it is the same in every lane and keeps the loop's counter,
  // and with it the stages' wgmma descriptors, in uniform registers. A loop bounded by a count
  // read from shared memory (or by the scan) rebuilt the step's 40 descriptors in per-thread
  // registers (VIADD, SHF, LOP3, R2UR each): 34% more instructions than flash_attention_3's
  // causal backward for the same products, and 228 bytes of spills a thread at head_dim 128 (now
  // 92; bench/results/flex-backward-steps-2026-11-26). Dense walks keep the walk's counters and
  // compile as before (one loop for both around a lambda measured flash_attention_3's own
  // backward 3-9% slower there).
  int visits = 0;
  if constexpr (kSparse) {
    for (int word = 0; word * 32 < walk.steps; ++word) visits += __popc(sm.visited[word]);
    visits = __shfl_sync(~0u, visits, 0);
  }
  auto sparse_step = [&](int it) {  // waits for the stage's step and reads its query block
    const int stage = it % STAGES;
    hopper::TxBarrier::wait(&sm.q_full[stage], (it / STAGES) & 1);
    return QueryStep{sm.step_head[stage], sm.step_m0[stage]};
  };
  int it = 0;
  for (Visit v = kSparse ? Visit{} : first_visit(); kSparse ? it < visits : v.step < walk.steps;
       v = kSparse ? v : next_visit(v), ++it) {
    const QueryStep st = kSparse ? sparse_step(it) : v.st;
    const int stage = it % STAGES, buf = it % 2;
    const int m0 = st.m0, h = st.head;

    // Block-sparse, a partial tile: which of the step's queries each of this thread's two keys
    // sees, one bit per accumulator column (k = 2 nt + c), formed before the products are issued
    // while S^T and dP^T are not live (the forward's keys_seen, transposed, unrolled as it is:
    // a sliding window's backward ran 1.07-1.15x faster).
    static_assert(BM / 4 <= 32, "a key's queries of this thread fit one word");
    uint32_t seen[2] = {~0u, ~0u};
    bool element_mask = false;
    if constexpr (Policy::kElementMask) {
      element_mask = pol.tile_element_mask(h, m0, n0);
      if (element_mask) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int j = n0 + key_in_block + 8 * r;
          uint32_t bits = 0;
#pragma unroll
          for (int k = 0; k < BM / 4; ++k) {
            bits |= static_cast<uint32_t>(pol.visible(h, m0 + (k >> 1) * 8 + 2 * t + (k & 1), j)) << k;
          }
          seen[r] = bits;
        }
      }
    }
    if constexpr (!kSparse) hopper::TxBarrier::wait(&sm.q_full[stage], (it / STAGES) & 1);

    float s[BM / 8][4], dp[BM / 8][4];
    float(&s_flat)[BM / 2] = reinterpret_cast<float(&)[BM / 2]>(s);
    float(&dp_flat)[BM / 2] = reinterpret_cast<float(&)[BM / 2]>(dp);
    hopper::fence_operands(s_flat);
    hopper::fence_operands(dp_flat);
    cute::warpgroup_arrive();
#pragma unroll
    for (int ks = 0; ks < HD / 16; ++ks) {
      GemmS::ss(hopper::k_major_desc<BN>(sm.k, kr0, ks), hopper::k_major_desc<BM>(sm.q[stage], 0, ks), s_flat, ks > 0);
    }
    cute::warpgroup_commit_batch();  // S^T
#pragma unroll
    for (int ks = 0; ks < HD / 16; ++ks) {
      GemmS::ss(hopper::k_major_desc<BN>(sm.v, kr0, ks), hopper::k_major_desc<BM>(sm.dout[stage], 0, ks), dp_flat,
                ks > 0);
    }
    cute::warpgroup_commit_batch();  // dP^T
    if constexpr (C::kOverlap) {
      cute::warpgroup_wait<1>();  // S^T
    } else {
      cute::warpgroup_wait<0>();
      hopper::fence_operands(dp_flat);
    }
    hopper::fence_operands(s_flat);

    // P^T = exp(S^T - lse), one k16 slice (two n8 tiles) at a time into the A fragments of
    // dV += P^T dO; s keeps P^T times the score map's derivative for dS^T = P^T (dP^T - D). The
    // per-element mask only where the warpgroup's tile crosses a boundary (a masked P^T is 0, and
    // so is its dS^T). dS^T goes into the A fragments of dK += dS^T Q and into shared memory for
    // dQ, in the 128-byte swizzle (keys are rows, 64-query chunks), each warp's 4-byte writes on
    // 32 distinct banks. With kOverlap, P^T runs while dP^T is in flight and dS^T while dV is;
    // without, each slice's dS^T follows its P^T, so the fp32 tiles die as they go.
    const float* lse = sm.lse[stage];
    const float* dd = sm.dd[stage];
    T* ds = sm.ds[buf];
    // This thread's dS^T row (key_in_block; + 8 for odd f) in the swizzle: 16-byte units trade
    // places by row % 8 = g. g8 is made opaque each step so that the compiler forms the slices'
    // addresses here instead of hoisting all of them out of the loop and spilling them.
    const int g8 = opaque(8 * g);
    T* ds_row = ds + key_in_block * 64 + 2 * t;
    uint32_t pt[BM / 16][4], dst[BM / 16][4];
    auto ds_slice = [&](int kk) {
#pragma unroll
      for (int nt = 2 * kk; nt < 2 * kk + 2; ++nt) {
        const float2 d2 = *reinterpret_cast<const float2*>(dd + nt * 8 + 2 * t);
#pragma unroll
        for (int e = 0; e < 4; ++e) dp[nt][e] = s[nt][e] * (dp[nt][e] - (e % 2 ? d2.y : d2.x));
      }
      accum_to_a<T>(dst[kk], dp[2 * kk], dp[2 * kk + 1]);
      // dst[kk]: keys (g, g + 8) x queries (16 kk + 2 t, 16 kk + 8 + 2 t), pairs.
#pragma unroll
      for (int f = 0; f < 4; ++f) {
        const int col = 16 * kk + 8 * (f / 2), chunk = col / 64;
        *reinterpret_cast<uint32_t*>(ds_row + chunk * BN * 64 + (f % 2) * 8 * 64 + ((col % 64) ^ g8)) = dst[kk][f];
      }
    };
    pol.with_scores(h, [&](const auto& scores) {
      // One flag for both masks: a tile that needs neither (most of a block-sparse walk's) runs
      // the loop without a per-element select.
      with_flag(element_mask || pol.tile_needs_mask(m0, BM, n0 + kr0, 64), [&](auto mask) {
        constexpr bool kMask = decltype(mask)::value;
        decltype(pol.col_mask(0, 0)) queries[2];
        if constexpr (kMask) {
#pragma unroll
          for (int r = 0; r < 2; ++r) queries[r] = pol.col_mask(h, n0 + key_in_block + 8 * r).shifted(m0 + 2 * t);
        }
#pragma unroll
        for (int kk = 0; kk < BM / 16; ++kk) {
          float pr[2][4];
#pragma unroll
          for (int nt = 2 * kk; nt < 2 * kk + 2; ++nt) {
            const float2 lse2 = *reinterpret_cast<const float2*>(lse + nt * 8 + 2 * t);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int r = e / 2, c = e % 2;
              const float raw = s[nt][e];
              const int i = m0 + nt * 8 + 2 * t + c, j = n0 + key_in_block + 8 * r;
              float x = fast_exp2(scores.log2(raw, i, j) - (c ? lse2.y : lse2.x));
              if (kMask && !queries[r].has(nt * 8 + c)) x = 0.f;
              if (Policy::kElementMask && kMask && !((seen[r] >> (2 * nt + c)) & 1u)) x = 0.f;
              pr[nt - 2 * kk][e] = x;
              s[nt][e] = x * scores.grad(raw, i, j);
            }
          }
          accum_to_a<T>(pt[kk], pr[0], pr[1]);
          if constexpr (!C::kOverlap) ds_slice(kk);
        }
      });
    });
    hopper::fence_operands(pt);
    hopper::fence_operands(dv_flat);
    if constexpr (C::kOverlap) {
      cute::warpgroup_arrive();
#pragma unroll
      for (int kk = 0; kk < BM / 16; ++kk) GemmD::rs(pt[kk], hopper::mn_major_desc<BM>(sm.dout[stage], kk), dv_flat);
      cute::warpgroup_commit_batch();  // dV
      cute::warpgroup_wait<1>();       // dP^T is complete, dV may still run
      hopper::fence_operands(dp_flat);
#pragma unroll
      for (int kk = 0; kk < BM / 16; ++kk) ds_slice(kk);
    }
    cutlass::arch::fence_view_async_shared();
    cutlass::arch::NamedBarrier::sync(256, 1);

    // dQ's share (with dV unless issued above) in a group before dK's, so that its store into
    // the shared tile runs under dK.
    float dq[8][4];
    float(&dq_flat)[32] = reinterpret_cast<float(&)[32]>(dq);
    const T* ds_chunk = ds + dq_row0 * BN;
    hopper::fence_operands(dk_flat);
    hopper::fence_operands(dq_flat);
    hopper::fence_operands(dst);
    cute::warpgroup_arrive();
    if constexpr (!C::kOverlap) {
#pragma unroll
      for (int kk = 0; kk < BM / 16; ++kk) GemmD::rs(pt[kk], hopper::mn_major_desc<BM>(sm.dout[stage], kk), dv_flat);
    }
#pragma unroll
    for (int ks = 0; ks < BN / 16; ++ks) {
      GemmQ::ss_mn(hopper::mn_major_desc<BN>(ds_chunk, ks), hopper::mn_major_desc<BN>(k_chunk, ks), dq_flat, ks > 0);
    }
    cute::warpgroup_commit_batch();  // dQ
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) GemmD::rs(dst[kk], hopper::mn_major_desc<BM>(sm.q[stage], kk), dk_flat);
    cute::warpgroup_commit_batch();  // dK
    cute::warpgroup_wait<1>();       // dV and dQ are complete
    hopper::fence_operands(dv_flat);
    hopper::fence_operands(dq_flat);
    hopper::fence_operands(pt);

    // This warpgroup's dQ rows (m0 + dq_row0 + 16 w + g, +8), columns dq_col0 + 8 nt + 2 t, into
    // the shared tile once the writer has read the previous step's; the swizzle follows the
    // rows' place in dq_accum, which need not be a multiple of 8 (varlen).
    hopper::Barrier::wait(&sm.dq_empty, (it & 1) ^ 1);
    // Rows r and r + 8 share row % 8, so both use one swizzle (dq_swizzled_pair written out:
    // pair dq_col0 / 2 + t + (4 nt ^ sw)).
    const int sw = dq_swizzled_pair(lse_index(p, seq, h, m0) + dq_row0 + warp * 16 + g, 0);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float* dq_row = sm.dq + (dq_row0 + warp * 16 + g + 8 * r) * HD + dq_col0 + 2 * t;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        *reinterpret_cast<float2*>(dq_row + 2 * ((4 * nt) ^ sw)) = make_float2(dq[nt][2 * r], dq[nt][2 * r + 1]);
      }
    }
    cutlass::arch::fence_view_async_shared();  // the bulk copy reads through the async proxy
    hopper::Barrier::arrive(&sm.dq_full);

    cute::warpgroup_wait<0>();
    hopper::fence_operands(dk_flat);
    hopper::fence_operands(dst);
    // Every thread releases its own reads of the stage's lse and D (an arrive orders only the
    // arriving thread's accesses); the products' reads of Q and dO are complete after the wait.
    hopper::Barrier::arrive(&sm.q_empty[stage]);
  }

  // dK = softmax_scale * sum dS^T Q, dV; keys past the sequence are not written, and a key no
  // query sees gets zeros.
  T* dk_out = head_base<T>(p, p.dk, b, hk, false);
  T* dv_out = head_base<T>(p, p.dv, b, hk, false);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int j = n0 + key_in_block + 8 * r;
    if (j >= seq.k_len) continue;
    store_accum_row<T>(dk_out + int64_t(j) * p.dk.row_stride, dk, r, t, p.softmax_scale);
    store_accum_row<T>(dv_out + int64_t(j) * p.dv.row_stride, dv, r, t, 1.0f);
  }
}

template <class T, int HD, class Policy>
__global__ void __launch_bounds__(BackwardConfig<HD>::kThreads, 1)
    backward_kernel(const __grid_constant__ AttentionParams p, const __grid_constant__ CUtensorMap tma_q,
                    const __grid_constant__ CUtensorMap tma_k, const __grid_constant__ CUtensorMap tma_v,
                    const __grid_constant__ CUtensorMap tma_do, const __grid_constant__ typename Policy::Params x,
                    int band) {
  backward_body<T, HD, Policy>(p, tma_q, tma_k, tma_v, tma_do, x, band);
}

}  // namespace attnrt::cuda::fa3
