// FlashAttention-3 forward (Shah et al. 2024, Algorithm 1) on Hopper: TMA loads, wgmma on
// shared-memory operands, warp specialization. A persistent CTA walks tiles of BM query rows of
// one (sequence, head) (forward_tile; BM = 192 at head_dim 64, else 128): warpgroup 0 is the
// producer, one thread of which issues every TMA load (Q once per tile, then K and V blocks into
// a ring of kStages buffers guarded by mbarriers); the other warpgroups are consumers of 64 rows
// each, S = Q K^T by wgmma from shared memory, the online softmax in registers, O += P V by wgmma
// with P straight from the S accumulators (the register operand) and V read transposed from
// shared memory. Registers move from the producer to the consumers with setmaxnreg. What happens
// to the scores between the products (scale, softcap, mask, where each row's softmax starts and
// ends) is the score policy's (score_policy.cuh), as in flash_attention_2: one policy, two
// mainloops.
#pragma once

#include "fa3_launch.hpp"

#include <attnrt_cuda/hopper/gmma.cuh>
#include <attnrt_cuda/hopper/tma.cuh>
#include <attnrt_cuda/score_policy.cuh>
#include <attnrt_cuda/tile.cuh>
#include <attnrt_cuda/warp_mma.cuh>

#include <cuda.h>

namespace attnrt::cuda::fa3 {

// BM: query rows per tile, ForwardTiles' unless a caller picks another multiple of 64 (flex_attention's
// Hopper path takes 128 at head_dim 64: two consumer warpgroups of 240 registers hold its
// per-element predicates, where three of 160 spilled).
template <int HD, int BM = ForwardTiles<HD>::kBM>
struct ForwardConfig {
  static constexpr int kBM = BM, kBN = ForwardTiles<HD>::kBN;
  static constexpr int kStages = 2;
  // A producer warpgroup and one consumer warpgroup per 64 query rows (two, or three at head_dim
  // 64). setmaxnreg moves registers from the producer to the consumers within what the launch
  // gave the CTA (its thread count times 168, or 128 at 512 threads): 24 a producer thread, 240
  // a consumer thread of two warpgroups, 160 of three. The dynamic scheduler's producer needs
  // more, else it spills in its load loop: 40 (232 a consumer) with two consumer warpgroups, 32
  // with three.
  static constexpr int kConsumers = BM / 64;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  template <bool kDynamic>
  static constexpr int kProducerRegs = !kDynamic         ? 24
                                       : kConsumers == 2 ? 40
                                                         : 32;
  template <bool kDynamic>
  static constexpr int kConsumerRegs = kConsumers == 3 ? 160
                                       : kDynamic      ? 232
                                                       : 240;
  static_assert(kConsumers == 2 || kConsumers == 3, "two or three consumer warpgroups");
  static_assert(128 * (kProducerRegs<true> + kConsumers * kConsumerRegs<true>) <=
                    kThreads * (kConsumers == 2 ? 168 : 128),
                "the registers the launch gives the CTA");
  static_assert(128 * (kProducerRegs<false> + kConsumers * kConsumerRegs<false>) <=
                    kThreads * (kConsumers == 2 ? 168 : 128),
                "the registers the launch gives the CTA");
  // Named barriers: 0 is __syncthreads; 1 + w a consumer warpgroup's own epilogue; kTurn + w its
  // turn to issue (ping-pong).
  static constexpr int kTurn = 1 + kConsumers;
  // O is staged for its store in a tile of its own where that fits beside Q and the K/V ring
  // (2-byte elements), so Q is free for the next tile's load once the tile's last S = Q K^T has
  // completed; at head_dim 256 it reuses Q's tile, which is then freed after the store.
  static constexpr bool kOwnO = (2 * BM * HD + 2 * kStages * kBN * HD) * 2 <= 200 * 1024;
};

// Key blocks a block-sparse tile walks, at most (flex_attention's Hopper path refuses longer
// sequences): 1024 blocks, 128k keys at 128 keys a block.
inline constexpr int kMaxWalk = 1024;

template <class T, int HD, int BM, int BN, int STAGES, bool kOwnO, bool kSparse = false>
struct ForwardSmem {
  static_assert(HD % hopper::kChunkCols == 0, "head_dim a multiple of the 64-column swizzle chunk");
  alignas(1024) T q[BM * HD];
  alignas(1024) T k[STAGES][BN * HD];
  alignas(1024) T v[STAGES][BN * HD];
  alignas(1024) T o[kOwnO ? BM * HD : 8];
  // The dynamic scheduler's ring of claimed tiles: three slots for block-sparse walks, whose
  // producer's scheduling warp runs ahead of its loading warp (forward_body).
  static constexpr int kTileSlots = kSparse ? 3 : 2;
  // The slot of the ring's it-th tile, and the parity of its pass round the ring (masks and
  // shifts for two slots, flash_attention_3's own ring, whose code is then unchanged).
  static __device__ __forceinline__ int tile_slot(int it) { return kTileSlots == 2 ? it & 1 : it % kTileSlots; }
  static __device__ __forceinline__ uint32_t tile_lap(int it) {
    return static_cast<uint32_t>(kTileSlots == 2 ? (it >> 1) & 1 : (it / kTileSlots) & 1);
  }
  alignas(8) uint64_t q_full, q_empty;
  uint64_t tile_full[kTileSlots], tile_empty[kTileSlots];
  int tile[kTileSlots];
  uint64_t k_full[STAGES], v_full[STAGES], k_empty[STAGES], v_empty[STAGES];
  // Block-sparse policies: each claimed tile's walk, by tile slot (walk_entry).
  int walk_count[kTileSlots];
  int walk[kTileSlots][kSparse ? kMaxWalk : 1];
  // Block-sparse: the K/V blocks the loading thread has issued and the scheduling warp has
  // published, across tiles (kClaimAhead). `published` has one reader and writer, but held in a
  // register it cost the hd128 kernel 52/80 bytes of spills (ptxas).
  int loaded, published;
};

// A block-sparse walk's entry: the key block, and per consumer warpgroup its rows' state of it
// (Policy's kSkip / kPartial / kFull, two bits each), which the producer reads once per tile.
__device__ __forceinline__ int walk_entry(int block, unsigned states) { return block | static_cast<int>(states << 16); }
__device__ __forceinline__ int walk_block(int entry) { return entry & 0xffff; }
__device__ __forceinline__ int walk_state(int entry, int warpgroup) { return (entry >> (16 + 2 * warpgroup)) & 3; }

// The policy of one (sequence, head): a block-sparse policy (flex_attention's) also takes its
// Params and the sequence index; the others read AttentionParams alone.
template <class Policy>
__device__ __forceinline__ Policy make_policy(const AttentionParams& p, const Seq& seq,
                                              const typename Policy::Params& x, int b) {
  if constexpr (Policy::kBlockSparse) {
    return Policy(p, seq, x, b);
  } else {
    return Policy(p, seq);
  }
}

// A tile of the persistent grid: BM query rows of one (sequence, head). Linear tile index:
// (sequence, head) major and, inside, the query blocks from the last (the longest under a causal
// mask) to the first, so that the CTAs in flight together share a head's K and V in L2. With
// kBanded (the dynamic scheduler's grids), (sequence, head) pairs in bands of `band` (q heads of a
// GQA group adjacent) and in a band query block by query block, longest first: the tiles in
// flight share the band's K and V (the launch sizes the band to fit in L2) and each band starts
// on its longest tiles. As the backward's backward_tile, with queries for keys.
struct ForwardTile {
  int b, h, m0;
};
template <int BM, bool kBanded>
__device__ __forceinline__ ForwardTile forward_tile(const AttentionParams& p, int tile, int m_blocks, int band) {
  if constexpr (kBanded) {
    const int pairs = p.heads_q * p.batch;
    const int first = tile / (band * m_blocks) * band, width = min(band, pairs - first);
    const int in_band = tile - first * m_blocks;
    const int pair = first + in_band % width, mb = m_blocks - 1 - in_band / width;
    return {pair / p.heads_q, pair % p.heads_q, mb * BM};
  } else {
    const int bh = tile / m_blocks, mb = m_blocks - 1 - tile % m_blocks;
    return {bh / p.heads_q, bh % p.heads_q, mb * BM};
  }
}

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

// The kernel's body, for forward_kernel below and for kernels defined elsewhere around it (flex_attention's
// Hopper path links one with the user's mods). The references are the kernel's __grid_constant__
// parameters: the TMA descriptors must stay in parameter space.
//
// Block-sparse policies (Policy::kBlockSparse: flex_attention's block masks) walk only the key
// blocks some row of the tile sees. The producer, which claims the tile (kDynamic), writes that
// walk into the tile's slot beside its index, last key block first as here, with each consumer
// warpgroup's state of each block: skipped (its rows see none of it: the block's scores become
// -inf, as a fully masked block's), partial (the policy's per-element predicate) or full. The
// consumers hand the slot back when the tile is done.
template <class T, int HD, class Policy, bool kPingpong, bool kDynamic, int kRows = ForwardTiles<HD>::kBM>
__device__ __forceinline__ void forward_body(const AttentionParams& p, const CUtensorMap& tma_q,
                                             const CUtensorMap& tma_k, const CUtensorMap& tma_v,
                                             const CUtensorMap& tma_o, const typename Policy::Params& x, int band) {
  using C = ForwardConfig<HD, kRows>;
  constexpr int BM = C::kBM, BN = C::kBN, STAGES = C::kStages;
  constexpr bool kSparse = Policy::kBlockSparse;
  static_assert(!kSparse || kDynamic, "a block-sparse walk is written by the producer that claims the tile");
  using Smem = ForwardSmem<T, HD, BM, BN, STAGES, C::kOwnO, kSparse>;
  // The swizzled tiles need 1024-byte alignment, which dynamic shared memory does not promise:
  // the launch adds 1 KB of slack.
  extern __shared__ unsigned char smem_raw[];
  Smem& sm = hopper::aligned_shared<Smem>(smem_raw);

  // Persistent (FlashAttention-3's tile schedulers): each CTA starts on tile blockIdx.x and goes
  // on to blockIdx.x + gridDim.x, ... where every tile costs the same, or, with kDynamic (tiles of
  // different lengths: causal, windows, varlen; p.tile_counter zeroed before the launch), to the
  // next tile no CTA has taken yet, so CTAs that drew short tiles take more of them; the producer
  // claims those and hands them to the consumers through a ring of two slots (three for
  // block-sparse walks, published by a warp of their own: see the producer). The K/V ring's
  // stage and phase run on across tiles, so the producer loads the next tile's Q and first K/V
  // blocks while the consumers finish the last one. (One kernel for both walks, the dealt one
  // reading the slots only when claimed, ran 4-11% slower on non-causal grids: two kernels.)
  const int m_blocks = ceil_div(p.seqlen_q, BM);
  const int num_tiles = m_blocks * p.heads_q * p.batch;
  const int group = p.heads_q / p.heads_kv;

  // Through a shuffle from lane 0 so that the compiler knows it is warp-uniform (CUTLASS's
  // canonical_warp_group_idx): the wgmma descriptors formed from it stay in uniform registers.
  const int warpgroup = __shfl_sync(~0u, static_cast<int>(threadIdx.x) / 128, 0);
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (threadIdx.x == 0) {
    hopper::TxBarrier::init(&sm.q_full, 1);
    hopper::Barrier::init(&sm.q_empty, 128 * C::kConsumers);  // every consumer thread, after its last read of Q
    if constexpr (kSparse) sm.loaded = sm.published = 0;
    if constexpr (kDynamic) {
      for (int s = 0; s < Smem::kTileSlots; ++s) {
        hopper::Barrier::init(&sm.tile_full[s], 1);
        // One arrival per consumer warp, and a block-sparse walk's loading thread's.
        hopper::Barrier::init(&sm.tile_empty[s], 4 * C::kConsumers + (kSparse ? 1 : 0));
      }
    }
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      hopper::TxBarrier::init(&sm.k_full[s], 1);
      hopper::TxBarrier::init(&sm.v_full[s], 1);
      hopper::Barrier::init(&sm.k_empty[s], 4 * C::kConsumers);  // one arrival per consumer warp
      hopper::Barrier::init(&sm.v_empty[s], 4 * C::kConsumers);
    }
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---- Producer: one thread issues every load; the warpgroup's other threads return, having
    // given their registers up. A block-sparse walk also keeps the second warp, which schedules:
    // it claims the tiles and its 32 lanes read the block mask's states of 32 key blocks at once
    // for each tile's walk (one thread reading them in turn left the consumers waiting: 0.6x of
    // the dense forward's speed at 64 blocks a tile), up to two tiles past the one being loaded
    // (three slots) and kClaimAhead blocks. With one warp doing both, a short walk's consumers waited at each
    // tile's end for the next tile's claim and walk (ncu, bench/results/flex-choice-2026-11-26
    // call 6); apart, the 256-key window and the document mask ran 7-15% faster at 16k keys.
    // flash_attention_3's own kernels keep one thread and compile as before.
    cutlass::arch::warpgroup_reg_dealloc<C::template kProducerRegs<kDynamic>>();
    if (threadIdx.x >= (kSparse ? 64 : 1)) return;
    const bool scheduler = kSparse && threadIdx.x >= 32;
    if (kSparse && !scheduler && lane != 0) return;  // the loading warp's other lanes
    const bool leader = lane == 0;
    if (leader) {
      hopper::prefetch_tensor_map(&tma_q);
      hopper::prefetch_tensor_map(&tma_k);
      hopper::prefetch_tensor_map(&tma_v);
      if (C::kOwnO && p.o_by_tma) hopper::prefetch_tensor_map(&tma_o);
    }
    constexpr uint32_t kQBytes = BM * HD * sizeof(T), kKVBytes = BN * HD * sizeof(T);
    // Block-sparse: the scheduling warp claims a tile only while at most this many published
    // K/V blocks wait for the loading thread (4 and 12 measured alike; with no limit, three slots
    // ahead, causal grids ran 2-10% slower: bench/results/flex-sched-2026-11-27).
    constexpr int kClaimAhead = 4;
    int kv_it = 0, tile_it = 0;  // K/V blocks and tiles loaded so far, across tiles
    // Hands a claimed tile to the consumers (with its walk, which `walk` writes with every lane
    // of the warp and returns the length of); a tile past the end tells them to stop.
    auto publish = [&](int tile, auto&& walk) {
      const int slot = Smem::tile_slot(tile_it);
      if (leader) hopper::Barrier::wait(&sm.tile_empty[slot], Smem::tile_lap(tile_it) ^ 1);
      if constexpr (kSparse) __syncwarp();
      const int n = walk(slot);
      if constexpr (kSparse) __syncwarp();  // the walk is written before the leader publishes it
      if (leader) {
        sm.tile[slot] = tile;
        sm.walk_count[slot] = n;
        hopper::Barrier::arrive(&sm.tile_full[slot]);
      }
      return n;
    };
    // The next tile: dealt in turn, or claimed from the counter (by the leader, for the warp).
    auto next_tile = [&](int tile) {
      if constexpr (!kDynamic) {
        return tile + static_cast<int>(gridDim.x);
      } else if constexpr (kSparse) {
        int claimed = 0;
        if (leader) {
          // A tile claimed early is one no other CTA can take.
          while (sm.published - *reinterpret_cast<volatile int*>(&sm.loaded) > kClaimAhead) __nanosleep(64);
          claimed = atomicAdd(p.tile_counter, 1);
        }
        return __shfl_sync(~0u, claimed, 0) + static_cast<int>(gridDim.x);
      } else {
        return atomicAdd(p.tile_counter, 1) + static_cast<int>(gridDim.x);
      }
    };
    // Issues a tile's loads: its Q once the last tile's readers let go of Q, then the K/V blocks
    // block_of(0 .. n_blocks) into the ring of stages, `issued()` after each.
    auto load_tile = [&](const ForwardTile& tl, int n_blocks, auto&& block_of, auto&& issued) {
      const int hk = tl.h / group;
      const SeqCoords qc = q_coords(p, tl.b), kc = k_coords(p, tl.b);
      hopper::Barrier::wait(&sm.q_empty, (tile_it & 1) ^ 1);
      hopper::TxBarrier::arrive_and_expect_tx(&sm.q_full, kQBytes);
#pragma unroll
      for (int c = 0; c < HD / 64; ++c) {
        hopper::tma_load_4d(&tma_q, &sm.q_full, sm.q + c * BM * 64, c * 64, qc.row0 + tl.m0, tl.h, qc.batch);
      }
      for (int it = 0; it < n_blocks; ++it, ++kv_it) {
        const int stage = kv_it % STAGES;
        const uint32_t phase = (kv_it / STAGES) & 1;
        const int n0 = block_of(it) * BN;
        // Paged: the block lies in one page (page_size a multiple of BN, fa3_calls.hpp), the
        // page's index read before the wait below, which hides its latency.
        int k_row = kc.row0 + n0, k_batch = kc.batch;
        if (p.block_table) {
          k_batch = p.block_table[int64_t(tl.b) * p.block_table_stride + n0 / p.page_size];
          k_row = n0 % p.page_size;
        }
        hopper::Barrier::wait(&sm.k_empty[stage], phase ^ 1);
        hopper::TxBarrier::arrive_and_expect_tx(&sm.k_full[stage], kKVBytes);
#pragma unroll
        for (int c = 0; c < HD / 64; ++c) {
          hopper::tma_load_4d(&tma_k, &sm.k_full[stage], sm.k[stage] + c * BN * 64, c * 64, k_row, hk, k_batch);
        }
        hopper::Barrier::wait(&sm.v_empty[stage], phase ^ 1);
        hopper::TxBarrier::arrive_and_expect_tx(&sm.v_full[stage], kKVBytes);
#pragma unroll
        for (int c = 0; c < HD / 64; ++c) {
          hopper::tma_load_4d(&tma_v, &sm.v_full[stage], sm.v[stage] + c * BN * 64, c * 64, k_row, hk, k_batch);
        }
        issued();
      }
    };
    if (kSparse && !scheduler) {
      // The loading thread: each published tile's Q and the blocks of its walk, in order; the slot
      // goes back once the walk is read.
      for (;; ++tile_it) {
        const int slot = Smem::tile_slot(tile_it);
        hopper::Barrier::wait(&sm.tile_full[slot], Smem::tile_lap(tile_it));
        const int tile = sm.tile[slot];
        if (tile >= num_tiles) return;
        load_tile(
            forward_tile<BM, kDynamic>(p, tile, m_blocks, band), sm.walk_count[slot],
            [&](int it) { return walk_block(sm.walk[slot][it]); },
            [&] { *reinterpret_cast<volatile int*>(&sm.loaded) = kv_it + 1; });
        hopper::Barrier::arrive(&sm.tile_empty[slot]);
      }
    }
    for (int tile = static_cast<int>(blockIdx.x); tile < num_tiles; tile = next_tile(tile)) {
      const ForwardTile tl = forward_tile<BM, kDynamic>(p, tile, m_blocks, band);
      const Seq seq = sequence(p, tl.b);
      if (tl.m0 >= seq.q_len) continue;  // varlen: past this sequence's rows
      const Policy pol = make_policy<Policy>(p, seq, x, tl.b);
      const BlockRange keys = pol.key_blocks(tl.m0, BM, BN);
      int n_blocks = keys.hi - keys.lo;
      if constexpr (kDynamic) {
        n_blocks = publish(tile, [&](int slot) {
          if constexpr (!kSparse) {
            return n_blocks;
          } else {
            // Lane l takes blocks hi-1-l, hi-1-l-32, ...: a warpgroup's state of a block it
            // sees (inside its rows' interval mask), else skipped; the blocks some warpgroup
            // sees are packed in order by a ballot.
            BlockRange seen[C::kConsumers];
#pragma unroll
            for (int w = 0; w < C::kConsumers; ++w) {
              const int r0 = tl.m0 + 64 * w;
              seen[w] = r0 < seq.q_len ? pol.key_blocks(r0, 64, BN) : BlockRange{0, 0};
            }
            static_assert(C::kConsumers <= Policy::kMaxGroups, "a state row per consumer warpgroup");
            const typename Policy::TileStates rows = pol.tile_states(tl.h, tl.m0, C::kConsumers, BN);
            int n = 0;
#pragma unroll 4
            for (int base = 0; base < n_blocks; base += 32) {
              const int nb = keys.hi - 1 - base - lane;
              unsigned states = 0;
              if (base + lane < n_blocks) {
                const int column = pol.state_column(rows, nb);
#pragma unroll
                for (int w = 0; w < C::kConsumers; ++w) {
                  if (nb >= seen[w].lo && nb < seen[w].hi) {
                    states |= static_cast<unsigned>(pol.state_at(rows, w, column)) << (2 * w);
                  }
                }
              }
              const unsigned visited = __ballot_sync(~0u, states != 0);
              if (states != 0) sm.walk[slot][n + __popc(visited & ((1u << lane) - 1))] = walk_entry(nb, states);
              n += __popc(visited);
            }
            return n;
          }
        });
      }
      if (!leader || kSparse) {  // (block-sparse: the scheduling warp, whose tile_it counts publications)
        if (kSparse && leader) sm.published += n_blocks;
        ++tile_it;
        continue;
      }
      // Last blocks first: the masked ones.
      load_tile(
          tl, n_blocks, [&](int it) { return keys.hi - 1 - it; }, [] {});
      ++tile_it;
    }
    if constexpr (kDynamic) publish(num_tiles, [](int) { return 0; });
    return;
  }

  // ---- Consumers: warpgroup 1 or 2, rows wr0 .. +64 of each tile; in it, warp w holds rows
  // 16 w + g and 16 w + g + 8 (g = lane / 4) of every accumulator, columns 8 i + 2 t, +1.
  cutlass::arch::warpgroup_reg_alloc<C::template kConsumerRegs<kDynamic>>();
  const int cw = warpgroup - 1;
  const int wr0 = cw * 64;
  constexpr int kLast = C::kConsumers - 1;
  const int next = cw == kLast ? 0 : cw + 1;
  const int warp = (static_cast<int>(threadIdx.x) % 128) / 32, g = lane / 4, t = lane % 4;
  const int row_in_block = wr0 + warp * 16 + g;  // and + 8

  using GemmS = hopper::Gemm<T, BN>;
  using GemmO = hopper::Gemm<T, HD>;
  int kv_it = 0, tile_it = 0;
  // The next tile: the producer's claim (kDynamic, never one without rows), or dealt in turn.
  // The slot goes back at once, or (block-sparse) once the tile's walk has been read.
  auto release_tile = [&] {
    __syncwarp();  // every lane has read the slot before it is handed back
    if (lane == 0) hopper::Barrier::arrive(&sm.tile_empty[Smem::tile_slot(tile_it)]);
  };
  auto receive = [&](int dealt) {
    if constexpr (!kDynamic) {
      return dealt;
    } else {
      const int slot = Smem::tile_slot(tile_it);
      hopper::Barrier::wait(&sm.tile_full[slot], Smem::tile_lap(tile_it));
      // Warp-uniform for the compiler (a shuffle from lane 0, as n_blocks below): the tile loop's
      // exit, and so every counter carried across tiles, depends on it.
      const int tile = __shfl_sync(~0u, sm.tile[slot], 0);
      if (!kSparse || tile >= num_tiles) release_tile();
      return tile;
    }
  };
  for (int tile = receive(static_cast<int>(blockIdx.x)); tile < num_tiles;
       tile = receive(tile + static_cast<int>(gridDim.x))) {
    const ForwardTile tl = forward_tile<BM, kDynamic>(p, tile, m_blocks, band);
    const int b = tl.b, h = tl.h, m0 = tl.m0;
    const Seq seq = sequence(p, b);
    if (m0 >= seq.q_len) continue;  // as the producer (the dealt walk: never a sparse one)
    const Policy pol = make_policy<Policy>(p, seq, x, b);
    const BlockRange keys = pol.key_blocks(m0, BM, BN);
    const int* walk = kSparse ? sm.walk[Smem::tile_slot(tile_it)] : nullptr;
    // The walk's length (and `skip` below) through a shuffle from lane 0, so that the compiler
    // knows them equal in every lane (CUTLASS's canonical_warp_idx_sync idiom) and keeps the
    // block counters, and with them the stages' wgmma descriptors, in uniform registers. Read
    // from shared memory or derived from the claimed tile, they left every step rebuilding its
    // descriptors in per-thread registers (bench/results/flex-backward-steps-2026-11-26: the
    // backward's 34% more instructions, and the same VIADD, SHF, LOP3, R2UR per product here).
    const int n_blocks = __shfl_sync(~0u, kSparse ? sm.walk_count[Smem::tile_slot(tile_it)] : keys.hi - keys.lo, 0);
    // The key block of step `it` (last blocks first: the masked ones).
    auto block_of = [&](int it) { return kSparse ? walk_block(walk[it]) : keys.hi - 1 - it; };

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
    // their GEMMs, ordered by two named barriers, so one's softmax (exp on the SFUs) runs while
    // the other's products hold the tensor cores. Each issue point syncs on its own barrier and
    // then releases the other warpgroup's; warpgroup 2 opens each tile with one release so
    // warpgroup 1 goes first, and skips the tile's very last release so that every barrier sees
    // whole generations, tile by tile (neither warpgroup gets more than one release ahead).
    const int issue_points = n_blocks + 1;  // S_0, then S_j with P_(j-1) V_(j-1), then the last P V
    int issued = 0;
    auto turn_begin = [&] {
      if constexpr (kPingpong) cutlass::arch::NamedBarrier::sync(256, C::kTurn + cw);
    };
    auto turn_end = [&] {
      ++issued;
      if constexpr (kPingpong) {
        if (cw != kLast || issued < issue_points) cutlass::arch::NamedBarrier::arrive(256, C::kTurn + next);
      }
    };
    if constexpr (kPingpong) {
      if (cw == kLast && n_blocks > 0) cutlass::arch::NamedBarrier::arrive(256, C::kTurn);
    }

    auto stage_of = [&](int it) { return (kv_it + it) % STAGES; };
    auto phase_of = [&](int it) { return static_cast<uint32_t>(((kv_it + it) / STAGES) & 1); };
    auto issue_s = [&](int stage) {
      hopper::fence_operands(s_flat);
#pragma unroll
      for (int ks = 0; ks < HD / 16; ++ks) {
        GemmS::ss(hopper::k_major_desc<BM>(sm.q, wr0, ks), hopper::k_major_desc<BN>(sm.k[stage], 0, ks), s_flat,
                  ks > 0);
      }
      cute::warpgroup_commit_batch();
    };
    // Paged: the sequence's last block holds rows of its page past seqused_k, which may hold
    // anything (NaN included; the ABI lets a cache be uninitialized there). Their P is 0, but
    // 0 * NaN is not, so this warpgroup zeroes those V rows before its P V reads them (the other
    // warpgroup may write the same zeros) and orders its writes before the async proxy's reads.
    // Elsewhere rows past a sequence are TMA's zero fill or the next sequence's finite keys.
    auto clear_v_tail = [&](int stage) {
      const int valid = seq.k_len - (keys.hi - 1) * BN;
      if (kSparse && block_of(0) != keys.hi - 1) return;  // the walk skips the last block
      if (!p.block_table || valid >= BN) return;
      const int tid = static_cast<int>(threadIdx.x) % 128;
      constexpr int kUnitsPerRow = 64 * sizeof(T) / 16;  // 16-byte units per row of a chunk
      const int units = (BN - valid) * kUnitsPerRow * (HD / 64);
      for (int u = tid; u < units; u += 128) {
        const int chunk = u / ((BN - valid) * kUnitsPerRow), rest = u % ((BN - valid) * kUnitsPerRow);
        const int row = valid + rest / kUnitsPerRow, unit = rest % kUnitsPerRow;
        *reinterpret_cast<uint4*>(sm.v[stage] + chunk * BN * 64 + row * 64 + unit * 8) = make_uint4(0, 0, 0, 0);
      }
      cutlass::arch::fence_view_async_shared();
      cutlass::arch::NamedBarrier::sync(128, 1 + cw);
    };
    auto issue_pv = [&](int stage) {
      hopper::fence_operands(o_flat);
#pragma unroll
      for (int ks = 0; ks < BN / 16; ++ks) GemmO::rs(pa[ks], hopper::mn_major_desc<BN>(sm.v[stage], ks), o_flat);
      cute::warpgroup_commit_batch();
    };
    // Q is free once this warpgroup's last S = Q K^T has completed, unless O is staged in it.
    auto release_q = [&] {
      if constexpr (C::kOwnO) hopper::Barrier::arrive(&sm.q_empty);
    };

    // Block-sparse: which of step it's keys each of this thread's two rows sees, one bit per
    // accumulator column (k = 2 nt + e): none where this warpgroup's state of the block is
    // skipped, the policy's predicate where it is partial, all where full. Formed before the
    // step's products are issued, while S is not live: evaluated beside S (the softmax), the
    // predicates' operands spilled (296 bytes a thread at head_dim 128). The columns' loop is
    // unrolled, so that the mask_mod's calls are independent instructions the scheduler can
    // interleave: rolled, its dependent index, compare and branch per column were the hottest
    // instructions of a sliding window's forward, which ran 1.19-1.29x faster unrolled (H100,
    // bench/results/flex-short-walks-2026-11-26).
    // The walk's entry is read once a step, here, and its first key kept for the softmax: read
    // again there, after the product's wait, its load's latency was exposed (stall samples,
    // bench/results/flex-tma-o-2026-11-27 call 2).
    static_assert(BN / 4 <= 32, "a row's keys of this thread fit one word");
    constexpr uint32_t kAllKeys = BN / 4 == 32 ? ~0u : (1u << (BN / 4)) - 1;
    uint32_t seen[2] = {kAllKeys, kAllKeys};
    int step_n0 = 0;           // block-sparse: the first key of the step keys_seen read last,
    bool step_masked = false;  // and whether its scores are masked (seen)
    auto keys_seen = [&](int it) {
      if constexpr (kSparse) {
        const int entry = walk[it];
        const int state = walk_state(entry, cw), n0 = walk_block(entry) * BN;
        step_n0 = n0;
        const bool partial = state == Policy::kPartial && pol.element_mask();
        // Both rows' predicates under one branch, and whether the softmax masks (kept here, where
        // the state is a warp's, so that its branch is the warp's too): a full block, most of a
        // walk, passes both without a taken branch or a reconvergence point (the branches' targets
        // and the masking's reconvergence were the step loop's most sampled instruction fetches:
        // bench/results/flex-walk-2026-11-27).
        step_masked = state == Policy::kSkip || partial;
        seen[0] = seen[1] = state == Policy::kSkip ? 0u : kAllKeys;
        if (partial) {
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const int i = m0 + row_in_block + 8 * r;
            uint32_t bits = 0;
#pragma unroll
            for (int k = 0; k < BN / 4; ++k) {
              bits |= static_cast<uint32_t>(pol.visible(h, i, n0 + (k >> 1) * 8 + 2 * t + (k & 1))) << k;
            }
            seen[r] = bits;
          }
        }
      }
    };

    // Scores, mask and the online softmax of step it's block in s: new row maxima, the factor
    // alpha that rescales what was accumulated (applied by the caller once the P V product in
    // flight is done), P = exp2(s * c - max * c) in place, and the row sums.
    auto softmax = [&](int it) {
      const int n0 = kSparse ? step_n0 : block_of(it) * BN;
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
      if constexpr (kSparse) {
        if (step_masked) {
#pragma unroll
          for (int r = 0; r < 2; ++r) {
#pragma unroll
            for (int k = 0; k < BN / 4; ++k) {
              if (!((seen[r] >> k) & 1u)) s[k >> 1][2 * r + (k & 1)] = -INFINITY;
            }
          }
        }
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

    // Intra-warpgroup overlap (FlashAttention-3, section 3.2): S_j = Q K_j^T is issued together
    // with O += P_(j-1) V_(j-1), and the softmax of S_j runs while that product is still in
    // flight; only the rescale of O waits for it. Blocks run last first (the masked ones).
    // In the claimed-tile kernel (causal, windows, varlen), the first `skip` blocks may hold no
    // key this warpgroup's rows see (under a causal mask, the tile's last key blocks for its first
    // rows): the warpgroup only takes their turns and hands their buffers back, once loaded (an
    // early arrival would count toward the stage's previous use). Its state afterwards is what
    // processing them fully masked would leave. (In the dealt kernel, whose tiles have no such
    // blocks, the same code cost 8% at hd64: bench/results/fa3-forward-2026-11-25/call12-skip.)
    // A warpgroup whose rows all lie past the sequence's end skips every block: the last tile of
    // a length that is not a multiple of the tile (at 192 rows and 2048 tokens, a third of the
    // tile that sees every key) would otherwise compute rows nobody stores.
    // A block-sparse walk marks the blocks a warpgroup's rows do not see as skipped for it, in
    // the walk's order (rows past the end see none). On 192-row tiles the leading run of them (a
    // causal mask's last blocks for the tile's first rows) is passed over the same way, and the
    // walk then starts after it (`lead`: the steps below count from there, so that they compile
    // as before; counted from the walk's start, they cost the hd128 kernel spills in its step
    // loop); the others are computed fully masked. (On 128-row tiles, whose two warpgroups share
    // a PyTorch block-mask row, such runs are rare, and counting them measured 1-4% slower at
    // hd128 16k: bench/results/flex-lead-2026-11-27 call 5.)
    int skip = 0, lead = 0;
    if constexpr (kSparse) {
      if constexpr (C::kConsumers == 3) {
        while (lead < n_blocks && walk_state(walk[lead], cw) == Policy::kSkip) ++lead;
      } else {
        skip = m0 + wr0 >= seq.q_len ? n_blocks : 0;
      }
    } else if constexpr (kDynamic) {
      skip = m0 + wr0 >= seq.q_len ? n_blocks : keys.hi - max(pol.key_blocks(m0 + wr0, 64, BN).hi, keys.lo);
    }
    skip = __shfl_sync(~0u, skip, 0);
    lead = __shfl_sync(~0u, lead, 0);
    hopper::TxBarrier::wait(&sm.q_full, tile_it & 1);
    for (int it = 0; it < skip + lead; ++it) {
      hopper::TxBarrier::wait(&sm.k_full[stage_of(it)], phase_of(it));
      turn_begin();
      turn_end();
      if (lane == 0) hopper::Barrier::arrive(&sm.k_empty[stage_of(it)]);
      hopper::TxBarrier::wait(&sm.v_full[stage_of(it)], phase_of(it));
      if (lane == 0) hopper::Barrier::arrive(&sm.v_empty[stage_of(it)]);
    }
    if constexpr (kSparse) {
      kv_it += lead;
      walk += lead;
    }
    const int steps = n_blocks - lead;  // from the walk's new start
    if (skip < steps) {
      keys_seen(skip);
      hopper::TxBarrier::wait(&sm.k_full[stage_of(skip)], phase_of(skip));
      turn_begin();
      cute::warpgroup_arrive();
      issue_s(stage_of(skip));
      turn_end();
      cute::warpgroup_wait<0>();
      hopper::fence_operands(s_flat);
      if (lane == 0) hopper::Barrier::arrive(&sm.k_empty[stage_of(skip)]);
      if (skip == steps - 1) release_q();
      softmax(skip);
      to_p();
    } else {
      release_q();
    }
    for (int it = skip + 1; it < steps; ++it) {
      const int stage = stage_of(it), prev = stage_of(it - 1);
      keys_seen(it);
      hopper::TxBarrier::wait(&sm.k_full[stage], phase_of(it));
      hopper::TxBarrier::wait(&sm.v_full[prev], phase_of(it - 1));
      if (it == 1) clear_v_tail(prev);
      turn_begin();
      cute::warpgroup_arrive();
      issue_s(stage);
      issue_pv(prev);
      turn_end();
      cute::warpgroup_wait<1>();  // S_j has landed; P_(j-1) V_(j-1) may still run
      hopper::fence_operands(s_flat);
      if (lane == 0) hopper::Barrier::arrive(&sm.k_empty[stage]);
      if (it == steps - 1) release_q();
      softmax(it);
      cute::warpgroup_wait<0>();
      hopper::fence_operands(o_flat);
      hopper::fence_operands(pa);
      if (lane == 0) hopper::Barrier::arrive(&sm.v_empty[prev]);
      rescale_o();
      to_p();
    }
    if (skip < steps) {
      const int last = stage_of(steps - 1);
      hopper::TxBarrier::wait(&sm.v_full[last], phase_of(steps - 1));
      if (steps == 1) clear_v_tail(last);
      turn_begin();
      cute::warpgroup_arrive();
      issue_pv(last);
      turn_end();
      cute::warpgroup_wait<0>();
      hopper::fence_operands(o_flat);
      hopper::fence_operands(pa);
      if (lane == 0) hopper::Barrier::arrive(&sm.v_empty[last]);
    } else if (n_blocks > 0) {
      turn_begin();  // the last product's turn, which every warpgroup takes
      turn_end();
    }
    kv_it += steps;

    // Epilogue: normalize, then O through this warpgroup's own rows of the staging tile (sm.o,
    // or Q's tile at head_dim 256: no other warpgroup reads those rows, and this one's last
    // S = Q K^T has completed) in the same swizzle, so the warps' 4-byte writes are free of bank
    // conflicts, and out by TMA stores of the warpgroup's 64 rows (FlashAttention-3's epilogue:
    // one thread issues them and the warpgroup goes on to its next tile while they run), or,
    // where the call has no O map (p.o_by_tma: packed rows), in 16-byte chunks of whole rows by
    // every thread. The first barrier keeps a warp's writes behind the other warps' reads of the
    // previous tile's rows, and behind the previous tile's TMA stores' reads, which the issuing
    // thread waits for.
    // The rows and threads are made opaque per tile so that the compiler forms the staging
    // addresses here rather than hoisting them out of the tile loop and spilling them.
    T* sO = C::kOwnO ? sm.o : sm.q;
    const int my_row = opaque(row_in_block), tid = opaque(static_cast<int>(threadIdx.x) % 128);
    const bool o_by_tma = C::kOwnO && p.o_by_tma;
    if (o_by_tma && tid == 0) hopper::bulk_wait_read();
    if constexpr (C::kOwnO) cutlass::arch::NamedBarrier::sync(128, 1 + cw);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const RowEnd end = pol.row_end(row_max[r], quad_sum(row_sum[r]), c);
      const float inv = end.inv();
      const int row = my_row + 8 * r;
#pragma unroll
      for (int dt = 0; dt < HD / 8; ++dt) {
        const int chunk = dt / 8, unit = (dt % 8) ^ (row % 8);
        *reinterpret_cast<uint32_t*>(sO + chunk * BM * 64 + row * 64 + unit * 8 + 2 * t) =
            pack2<T>(o[dt][2 * r] * inv, o[dt][2 * r + 1] * inv);
      }
      const int i = m0 + row;
      if (p.lse && t == 0 && i < seq.q_len) p.lse[lse_index(p, seq, h, i)] = end.lse();
    }
    if (o_by_tma) {
      cutlass::arch::fence_view_async_shared();        // the writes, to the TMA unit's reads
      cutlass::arch::NamedBarrier::sync(128, 1 + cw);  // this warpgroup's rows are written
      if (tid == 0) {
        const SeqCoords qc = q_coords(p, b);
#pragma unroll
        for (int c = 0; c < HD / 64; ++c) {
          hopper::tma_store_4d(&tma_o, sO + c * BM * 64 + wr0 * 64, c * 64, qc.row0 + m0 + wr0, h, qc.batch);
        }
        hopper::bulk_commit();
      }
      if constexpr (kSparse) release_tile();
      ++tile_it;
      continue;
    }
    cutlass::arch::NamedBarrier::sync(128, 1 + cw);  // this warpgroup's rows are written
    T* out = head_base<T>(p, p.out, b, h, true);
    constexpr int kUnits = HD / 8;     // 16-byte units per row
    const int units = p.head_dim / 8;  // the call's: fewer on a padded kernel (fa3_calls.hpp)
#pragma unroll
    for (int pass = 0; pass < 64 * kUnits / 128; ++pass) {
      const int u = pass * 128 + tid, row = wr0 + u / kUnits, col_unit = u % kUnits;
      const int i = m0 + row;
      if (i < seq.q_len && col_unit < units) {
        const int chunk = col_unit / 8, unit = (col_unit % 8) ^ (row % 8);
        *reinterpret_cast<uint4*>(out + int64_t(i) * p.out.row_stride + col_unit * 8) =
            *reinterpret_cast<const uint4*>(sO + chunk * BM * 64 + row * 64 + unit * 8);
      }
    }
    if constexpr (!C::kOwnO) {
      // Q's tile held O: the next tile's Q (a TMA write) may land once every read is done.
      cutlass::arch::fence_view_async_shared();
      hopper::Barrier::arrive(&sm.q_empty);
    }
    if constexpr (kSparse) release_tile();
    ++tile_it;
  }
  // The last tile's stores read this CTA's shared memory, which must outlive them.
  if (C::kOwnO && p.o_by_tma && threadIdx.x % 128 == 0) hopper::bulk_wait_read();
}

template <class T, int HD, class Policy, bool kPingpong, bool kDynamic>
__global__ void __launch_bounds__(ForwardConfig<HD>::kThreads, 1)
    forward_kernel(const __grid_constant__ AttentionParams p, const __grid_constant__ CUtensorMap tma_q,
                   const __grid_constant__ CUtensorMap tma_k, const __grid_constant__ CUtensorMap tma_v,
                   const __grid_constant__ CUtensorMap tma_o, const __grid_constant__ typename Policy::Params x,
                   int band) {
  forward_body<T, HD, Policy, kPingpong, kDynamic>(p, tma_q, tma_k, tma_v, tma_o, x, band);
}

}  // namespace attnrt::cuda::fa3
