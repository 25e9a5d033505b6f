// flex_attention's score policy (score_policy.cuh) for flash_attention_2's kernels, forward and
// backward: the user's score_mod maps each score (score_mod_grad its derivative for backward),
// mask_mod hides pairs in the tiles that are not full, and the block mask's per-block states
// make the kernels skip whole tiles (forward: next_block; backward: tile_skipped). Compiled by
// NVRTC after the mods' unit (kernels/flex/mods.hpp, Target::kCuda), which defines
// attnrt_flex_user::score_mod / mask_mod / score_mod_grad and ATTNRT_FLEX_HAS_SCORE_MOD.
#pragma once

#include <attnrt_cuda/score_policy.cuh>

namespace attnrt::cuda {

class FlexScores : public StandardScores {
 public:
  using Params = attnrt_flex::KernelParams;
  // b is the grid's z in every kernel of flash_attention_2 (the sequence); h_ its y, the query
  // head, in the forward only (the backward names its head per tile).
  __device__ __forceinline__ FlexScores(const AttentionParams& params, const Seq& s, const Params& x)
      : StandardScores(params, s), x_(x), b_(static_cast<int>(blockIdx.z)), h_(static_cast<int>(blockIdx.y)) {}

  static constexpr bool kElementMask = true;
  // Forward: key blocks nb of x.forward_bn keys.
  __device__ __forceinline__ int first_block(int m0, int lo, int hi) const { return visit(m0, lo, hi); }
  __device__ __forceinline__ int next_block(int m0, int nb, int hi) const { return visit(m0, nb + 1, hi); }
  __device__ __forceinline__ bool block_element_mask(int m0, int nb) const {
    return tile_element_mask(h_, m0, nb * x_.forward_bn);
  }
  // Backward: the tile of query head h at rows m0.. and keys n0.. (inside one block).
  __device__ __forceinline__ bool tile_skipped(int h, int m0, int n0) const {
    return x_.tile_state != nullptr && state(h, m0, n0) == attnrt_flex::kTileSkip;
  }
  __device__ __forceinline__ bool tile_element_mask(int h, int m0, int n0) const {
    return x_.has_mask_mod && (x_.tile_state == nullptr || state(h, m0, n0) == attnrt_flex::kTilePartial);
  }
  // The mods see positions inside the sequence only: a tile that crosses its end asks about
  // rows and keys past it too (their results are masked or never stored), and a mod that reads
  // an aux tensor at q_idx must not read past it (GPU reads are not bounds-checked).
  __device__ __forceinline__ bool visible(int h, int i, int j) const {
    return attnrt_flex_user::mask_mod(x_.ctx, b_, h, min(i, seq.q_len - 1), min(j, seq.k_len - 1));
  }

  // score_mod on softmax_scale * q.k (natural log), then to the kernels' log2 domain; grad is
  // d(logit)/d(raw) / softmax_scale (SoftcapScores' convention): score_mod_grad at the same score.
  struct ModScores {
    const AttentionParams& p;
    const attnrt_flex::Context& ctx;
    int b, h, i_last, j_last;  // positions clamped to the sequence, as in visible()
    __device__ __forceinline__ float log2(float raw, int i, int j) const {
      return attnrt_flex_user::score_mod(ctx, raw * p.softmax_scale, b, h, min(i, i_last), min(j, j_last)) * kLog2e;
    }
    __device__ __forceinline__ float grad(float raw, int i, int j) const {
      if constexpr (!ATTNRT_FLEX_HAS_SCORE_MOD) return 1.0f;
      return attnrt_flex_user::score_mod_grad(ctx, raw * p.softmax_scale, b, h, min(i, i_last), min(j, j_last));
    }
  };
  __device__ __forceinline__ bool linear() const { return !ATTNRT_FLEX_HAS_SCORE_MOD && StandardScores::linear(); }
  template <class Fn>
  __device__ __forceinline__ void with_scores(int h, Fn&& fn) const {
    fn(ModScores{p, x_.ctx, b_, h, seq.q_len - 1, seq.k_len - 1});
  }

 private:
  __device__ __forceinline__ unsigned char state(int h, int m0, int n0) const {
    const int bb = x_.state_batch == 1 ? 0 : b_, hh = x_.state_heads == 1 ? 0 : h;
    const int kb = n0 / x_.kv_block;
    const long long row = (static_cast<long long>(bb) * x_.state_heads + hh) * x_.q_blocks + m0 / x_.q_block;
    return kb < x_.k_blocks ? x_.tile_state[row * x_.k_blocks + kb] : attnrt_flex::kTileSkip;
  }
  // The first key block of the forward (x.forward_bn keys) at or after nb (before hi) that the
  // block mask does not skip.
  __device__ __forceinline__ int visit(int m0, int nb, int hi) const {
    if (x_.tile_state == nullptr) return nb;
    while (nb < hi && state(h_, m0, nb * x_.forward_bn) == attnrt_flex::kTileSkip) ++nb;
    return nb;
  }

  const Params& x_;
  int b_, h_;
};

}  // namespace attnrt::cuda

// Per-block states from a PyTorch BlockMask: one warp per (batch, head, query block) owns that
// block's row (no races): all skipped, then the partial list, then the full list, its lanes taking
// 32 blocks or list entries at a time (with a thread a row, each entry's load waited for the store
// before it, which may alias it). Entries outside the keys are ignored here; the CPU path reports
// them. `counter` (the Hopper forward's tile counter, or NULL) is zeroed here too, which spares the
// call a memset.
//
// With `walks` (the Hopper forward's choice of tile height at head_dim 64, rows_chosen in
// flex_hopper_policy.cuh), more warps follow the rows' ones, one per (row of the lists' sequences
// and heads, tile) of 128 rows (summed in walks[0]) and of 192 (walks[1]): each costs its tile's
// forward, from the lists themselves (so it needs no other warp's states). The tile's walk is the
// key blocks some block-mask row of it lists (a bitmap of the keys in shared memory); each
// consumer warpgroup (64 rows) computes the walk's blocks up to the last one its own row lists
// and passes over those above (fa3_forward.cuh's `lead`). A tile costs ATTNRT_FLEX_TILE_COST
// (its Q load, the pipeline's fill and drain, its epilogue) plus its warpgroups' steps (each
// listed block of the mask `block_steps` steps of the kernel's 128 keys: kv_block_size / 128) at
// ATTNRT_FLEX_STEP_COST_128 or _192 each (three warpgroups keep the tensor cores busier: 1.14x
// the dense throughput of two at head_dim 64). The constants fit the times of the 256-key window
// (192 rows 0-8% faster), causal (13-15%), the document mask (7-13%) and a random 90%-sparse
// mask (128 rows 1.4-1.6x faster) at 8k and 16k keys (bench/results/flex-lead-2026-11-27/). The
// block adds its warps' costs and makes two atomic additions. `walks` must be zero before the
// launch (the plugin clears it with a memset: this kernel cannot, as other blocks may add to it
// first). Past ATTNRT_FLEX_WALK_KEY_BLOCKS key blocks nothing is counted, which leaves 128 rows.
// (A kernel of its own, a thread a tile walking the states one load after another, took 21-46 us
// at 8k-16k keys: bench/results/flex-rows192-2026-11-26/.)
#define ATTNRT_FLEX_STATE_THREADS 128
#define ATTNRT_FLEX_WALK_KEY_BLOCKS 1024
#define ATTNRT_FLEX_TILE_COST 180
#define ATTNRT_FLEX_STEP_COST_128 114
#define ATTNRT_FLEX_STEP_COST_192 100

extern "C" __global__ void __launch_bounds__(ATTNRT_FLEX_STATE_THREADS)
    attnrt_flex_block_states(unsigned char* state, int batch, int heads, int q_blocks, int k_blocks,
                             attnrt_flex::List partial, attnrt_flex::List full, int has_full, int* counter,
                             unsigned long long* walks, int q_block, int seqlen_q, int block_steps) {
#if __CUDA_ARCH__ >= 900
  // On sm_90 this kernel is itself a programmatic dependent of the kernel before it on the stream
  // (kernel_params in flex_cuda_plugin.cpp), so that its launch overlaps that kernel's end: it
  // reads and writes nothing before that kernel has completed and flushed (the kernel before may
  // be the last call's forward, which reads the states this overwrites, or one that writes the
  // lists). A no-op in a launch without the attribute.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  // The Hopper forward that follows may start its CTAs now (it waits for this grid's completion
  // before its first read of what this writes: griddepcontrol.wait, hopper_forward.cu.in).
  asm volatile("griddepcontrol.launch_dependents;");
#endif
  constexpr int kWarps = ATTNRT_FLEX_STATE_THREADS / 32, kWords = ATTNRT_FLEX_WALK_KEY_BLOCKS / 32;
  __shared__ unsigned bits[kWarps][kWords];
  __shared__ unsigned long long sums[2][kWarps];
  const long long thread = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (thread == 0 && counter != nullptr) *counter = 0;
  const long long id = thread / 32;  // the warp's item (warp-uniform: the branches below keep warps whole)
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const long long rows = static_cast<long long>(batch) * heads * q_blocks;
  // The lists' entries of block-mask row (b, h, m), `fn(block, value)` for each inside the keys,
  // the lanes taking 32 entries at a time, the partial list's before the full list's.
  auto for_entries = [&](int b, int h, int m, auto&& fn) {
    for (int list = 0; list < (has_full ? 2 : 1); ++list) {
      // (Fields picked one by one: a reference to either parameter would copy both to the stack.)
      auto pick = [list](auto from_partial, auto from_full) { return list == 0 ? from_partial : from_full; };
      const unsigned char value = pick(attnrt_flex::kTilePartial, attnrt_flex::kTileFull);
      const int* num = pick(partial.num, full.num);
      const int* idx = pick(partial.idx, full.idx);
      const long long count_at = b * pick(partial.num_stride[0], full.num_stride[0]) +
                                 h * pick(partial.num_stride[1], full.num_stride[1]) +
                                 m * pick(partial.num_stride[2], full.num_stride[2]);
      const long long entries_at = b * pick(partial.idx_stride[0], full.idx_stride[0]) +
                                   h * pick(partial.idx_stride[1], full.idx_stride[1]) +
                                   m * pick(partial.idx_stride[2], full.idx_stride[2]);
      const long long step = pick(partial.idx_stride[3], full.idx_stride[3]);
      const int width = pick(partial.width, full.width);
      int count = num[count_at];
      count = count < 0 ? 0 : count > width ? width : count;
      for (int t = lane; t < count; t += 32) {
        const int block = idx[entries_at + t * step];
        if (block >= 0 && block < k_blocks) fn(block, value);
      }
      __syncwarp();  // the full list's states land after the partial list's: a block in both is full
    }
  };
  unsigned long long visited_low = 0, visited_tall = 0;  // this warp's tile's cost, at each height
  if (id < rows) {
    const int m = static_cast<int>(id % q_blocks), h = static_cast<int>(id / q_blocks % heads),
              b = static_cast<int>(id / q_blocks / heads);
    unsigned char* row = state + id * k_blocks;
    // Both lists' counts and first 32 entries (of the row's width: inside the tensor, used only
    // under the counts) are loaded before the row's first store, which could alias them and so
    // would hold every load after it: two waits on memory instead of four where the rows list at
    // most 32 blocks (most do up to 4k keys).
    const long long p_at = b * partial.idx_stride[0] + h * partial.idx_stride[1] + m * partial.idx_stride[2];
    const long long f_at = b * full.idx_stride[0] + h * full.idx_stride[1] + m * full.idx_stride[2];
    int p_count = partial.num[b * partial.num_stride[0] + h * partial.num_stride[1] + m * partial.num_stride[2]];
    int f_count = has_full ? full.num[b * full.num_stride[0] + h * full.num_stride[1] + m * full.num_stride[2]] : 0;
    const int p_first = lane < partial.width ? partial.idx[p_at + lane * partial.idx_stride[3]] : -1;
    const int f_first = has_full && lane < full.width ? full.idx[f_at + lane * full.idx_stride[3]] : -1;
    p_count = p_count < 0 ? 0 : p_count > partial.width ? partial.width : p_count;
    f_count = f_count < 0 ? 0 : f_count > full.width ? full.width : f_count;
    for (int n = lane; n < k_blocks; n += 32) row[n] = attnrt_flex::kTileSkip;
    __syncwarp();
    auto put = [&](int block, unsigned char value) {
      if (block >= 0 && block < k_blocks) row[block] = value;
    };
    if (lane < p_count) put(p_first, attnrt_flex::kTilePartial);
    for (int t = lane + 32; t < p_count; t += 32)
      put(partial.idx[p_at + t * partial.idx_stride[3]], attnrt_flex::kTilePartial);
    __syncwarp();  // the full list's states land after the partial list's: a block in both is full
    if (lane < f_count) put(f_first, attnrt_flex::kTileFull);
    for (int t = lane + 32; t < f_count; t += 32) put(full.idx[f_at + t * full.idx_stride[3]], attnrt_flex::kTileFull);
  } else if (walks != nullptr) {
    const int low = (seqlen_q + 127) / 128, tall = (seqlen_q + 191) / 192;
    const long long item = id - rows;
    if (item < static_cast<long long>(batch) * heads * (low + tall) && k_blocks <= ATTNRT_FLEX_WALK_KEY_BLOCKS) {
      int t = static_cast<int>(item % (low + tall));
      const int bh = static_cast<int>(item / (low + tall));
      const int which = t >= low;
      if (which) t -= low;
      const int tile_rows = which ? 192 : 128;
      const int r_lo = t * tile_rows / q_block;
      const int r_hi = min(min(t * tile_rows + tile_rows, seqlen_q) - 1, q_blocks * q_block - 1) / q_block;
      unsigned* mine = bits[warp];
      for (int w = lane; w < kWords; w += 32) mine[w] = 0;
      __syncwarp();
      for (int r = r_lo; r <= r_hi; ++r) {
        for_entries(bh / heads, bh % heads, r,
                    [&](int block, unsigned char) { atomicOr(&mine[block / 32], 1u << (block % 32)); });
      }
      __syncwarp();
      unsigned long long cost = ATTNRT_FLEX_TILE_COST;
      for (int wg = 0; wg < tile_rows / 64; ++wg) {
        const int row0 = t * tile_rows + 64 * wg;
        if (row0 >= seqlen_q) break;  // (rows past the end compute nothing)
        int top = -1;                 // the last key block the warpgroup's row lists
        for_entries(bh / heads, bh % heads, min(row0 / q_block, q_blocks - 1),
                    [&](int block, unsigned char) { top = max(top, block); });
        top = __reduce_max_sync(0xffffffffu, top);
        unsigned steps = 0;  // the walk's blocks 0 .. top
        for (int w = lane; w <= top / 32 && top >= 0; w += 32) {
          const unsigned word = mine[w];
          steps += __popc(w < top / 32 ? word : word & ((2u << (top % 32)) - 1));  // (2u << 31) - 1: all
        }
        steps = __reduce_add_sync(0xffffffffu, steps) * block_steps;
        cost +=
            static_cast<unsigned long long>(steps) * (which ? ATTNRT_FLEX_STEP_COST_192 : ATTNRT_FLEX_STEP_COST_128);
      }
      (which ? visited_tall : visited_low) = cost;
    }
  }
  if (walks == nullptr) return;  // (block-uniform)
  if (lane == 0) {
    sums[0][warp] = visited_low;
    sums[1][warp] = visited_tall;
  }
  __syncthreads();
  if (threadIdx.x < 2) {
    unsigned long long total = 0;
    for (int w = 0; w < kWarps; ++w) total += sums[threadIdx.x][w];
    if (total) atomicAdd(walks + threadIdx.x, total);
  }
}
