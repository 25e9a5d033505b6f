// flex_attention's score policy for flash_attention_3's forward (fa3_forward.cuh, its
// block-sparse walk) and backward (fa3_backward.cuh, its bitmask of visited steps) on Hopper.
// Unlike flex_policy.cuh, which NVRTC compiles after the mods' unit, this one is compiled once by
// nvcc, to LTO-IR (hopper_forward.cu.in, hopper_backward.cu.in): the mods are extern "C" device
// functions that the mods' unit defines (hopper_module.cpp) and nvJitLink's link-time
// optimization inlines when it links the two, as cuFFT's LTO callbacks are.
// The block mask's per-block states are flex_policy.cuh's (attnrt_flex_block_states builds them);
// mods see positions clamped to the sequence, as there.
#pragma once

#include <attnrt_cuda/score_policy.cuh>

extern "C" __device__ float attnrt_flex_score_mod(const attnrt_flex::Context& ctx, float score, int b, int h, int q_idx,
                                                  int kv_idx);
extern "C" __device__ bool attnrt_flex_mask_mod(const attnrt_flex::Context& ctx, int b, int h, int q_idx, int kv_idx);
extern "C" __device__ float attnrt_flex_score_mod_grad(const attnrt_flex::Context& ctx, float score, int b, int h,
                                                       int q_idx, int kv_idx);

namespace attnrt::cuda {

// Whether the forward kernel of `rows` query rows a tile runs this call (attnrt_flex::KernelParams
// tile_walks): the height whose tiles cost less in all (attnrt_flex_block_states' model). A
// 192-row tile walks the union of the key blocks of the block mask's rows it spans, with a
// warpgroup masked on a block its own row skips unless the block leads the walk; it pays where
// the rows share their blocks, or where short walks make the tiles' fixed costs count: causal,
// documents, dense and a 256-key window take 192 rows, a random 90%-sparse mask 128. The choice
// costs a call 10-19 us (the sums, and the other kernel's launch), so the plugin makes it once per
// mods and block mask (rows_choice.hpp).
__device__ __forceinline__ bool rows_chosen(const attnrt_flex::KernelParams& x, int rows) {
  if (x.tile_walks == nullptr) return true;
  const bool tall = x.tile_walks[1] < x.tile_walks[0];
  return (rows == 192) == tall;
}

// kScoreMod: whether the call has a score_mod (else scores are the ABI's, and the forward folds
// the scale into its exponent).
template <bool kScoreMod>
class FlexHopperScores : public StandardScores {
 public:
  using Params = attnrt_flex::KernelParams;
  static constexpr bool kBlockSparse = true;  // the forward's walk
  static constexpr bool kElementMask = true;  // the backward's (score_policy.cuh)
  static constexpr int kSkip = attnrt_flex::kTileSkip, kPartial = attnrt_flex::kTilePartial;
  static_assert(attnrt_flex::kTileSkip == 0, "a walk entry with every warpgroup skipped is 0 (fa3_forward.cuh)");

  // b: the tile's sequence (the persistent kernel's tiles name it; the grid does not).
  __device__ __forceinline__ FlexHopperScores(const AttentionParams& params, const Seq& s, const Params& x, int b)
      : StandardScores(params, s), x_(x), b_(b) {}

  // The state of the block-mask block that holds query row m0 (rows m0 .. m0 + 64 lie in one
  // block: the plugin checks that q blocks are multiples of 64) and key n0 (likewise, of the
  // kernel's key blocks): partial everywhere without a block mask.
  __device__ __forceinline__ int block_state(int h, int m0, int n0) const {
    if (x_.tile_state == nullptr) return kPartial;
    const int kb = n0 / x_.kv_block;
    return kb < x_.k_blocks ? state_row(h, m0)[kb] : kSkip;
  }
  // The forward's walk (fa3_forward.cuh) reads a tile's states through these: tile_states once
  // a tile (query rows m0 .. of head h, `groups` consumer warpgroups of 64 rows), state_column
  // once a key block nb of the kernel's `bn` keys, then state_at per warpgroup w: one load, as
  // block_state without its two divisions by the block sizes and its 64-bit row index at every
  // block and warpgroup, whose registers the scheduling warp's 32 spilled at 192 rows (100
  // bytes; ptxas).
  static constexpr int kMaxGroups = 3;
  struct TileStates {
    const unsigned char* row;  // the states' row of the block that holds row m0; NULL: no block mask
    int below[kMaxGroups];     // each warpgroup's row, in elements past `row`
    int steps;                 // the kernel's key blocks per block of the mask (a whole number)
  };
  __device__ __forceinline__ TileStates tile_states(int h, int m0, int groups, int bn) const {
    TileStates t{nullptr, {0, 0, 0}, 1};
    if (x_.tile_state == nullptr) return t;
    const int m = m0 / x_.q_block;
    t.row = state_row(h, m0);
    for (int w = 1; w < groups && w < kMaxGroups; ++w) t.below[w] = ((m0 + 64 * w) / x_.q_block - m) * x_.k_blocks;
    t.steps = x_.kv_block / bn;
    return t;
  }
  // The column of key block nb in the states' rows; -1 past them.
  __device__ __forceinline__ int state_column(const TileStates& t, int nb) const {
    const int kb = t.steps == 1 ? nb : nb / t.steps;
    return kb < x_.k_blocks ? kb : -1;
  }
  // (The states are written before the forward and only read in it: the read-only path.)
  __device__ __forceinline__ int state_at(const TileStates& t, int w, int column) const {
    if (t.row == nullptr) return kPartial;
    return column < 0 ? kSkip : __ldg(t.row + t.below[w] + column);
  }
  // Whether partial blocks ask mask_mod (a call without one computes them whole).
  __device__ __forceinline__ bool element_mask() const { return x_.has_mask_mod != 0; }
  // The backward's tile of query head h at rows m0.. and keys n0.. (inside one block).
  __device__ __forceinline__ bool tile_skipped(int h, int m0, int n0) const { return block_state(h, m0, n0) == kSkip; }
  __device__ __forceinline__ bool tile_element_mask(int h, int m0, int n0) const {
    return element_mask() && block_state(h, m0, n0) == kPartial;
  }
  __device__ __forceinline__ bool visible(int h, int i, int j) const {
    return attnrt_flex_mask_mod(x_.ctx, b_, h, min(i, seq.q_len - 1), min(j, seq.k_len - 1));
  }

  // score_mod on softmax_scale * q.k (natural log), then to the kernel's log2 domain.
  struct ModScores {
    const AttentionParams& p;
    const attnrt_flex::Context& ctx;
    int b, h, i_last, j_last;
    __device__ __forceinline__ float log2(float raw, int i, int j) const {
      return attnrt_flex_score_mod(ctx, raw * p.softmax_scale, b, h, min(i, i_last), min(j, j_last)) * kLog2e;
    }
    // d(logit)/d(raw) / softmax_scale: score_mod_grad at the same score (SoftcapScores' convention).
    __device__ __forceinline__ float grad(float raw, int i, int j) const {
      return attnrt_flex_score_mod_grad(ctx, raw * p.softmax_scale, b, h, min(i, i_last), min(j, j_last));
    }
  };
  __device__ __forceinline__ bool linear() const { return !kScoreMod && StandardScores::linear(); }
  template <class Fn>
  __device__ __forceinline__ void with_scores(int h, Fn&& fn) const {
    if constexpr (kScoreMod) {
      fn(ModScores{p, x_.ctx, b_, h, seq.q_len - 1, seq.k_len - 1});
    } else {
      StandardScores::with_scores(h, fn);
    }
  }

 private:
  // The states' row of the block-mask block that holds query row m0 of head h (tile_state set).
  __device__ __forceinline__ const unsigned char* state_row(int h, int m0) const {
    const int bb = x_.state_batch == 1 ? 0 : b_, hh = x_.state_heads == 1 ? 0 : h;
    const long long row = (static_cast<long long>(bb) * x_.state_heads + hh) * x_.q_blocks + m0 / x_.q_block;
    return x_.tile_state + row * x_.k_blocks;
  }

  const Params& x_;
  int b_;
};

}  // namespace attnrt::cuda
