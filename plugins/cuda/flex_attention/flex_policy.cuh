// flex_attention's score policy (score_policy.cuh) for flash_attention_2's forward mainloop:
// the user's score_mod maps each score, mask_mod hides pairs in the tiles that are not full, and
// the block mask's per-tile states make the mainloop skip whole tiles (next_block). Compiled by
// NVRTC after the mods' unit (kernels/flex/mods.hpp, Target::kCuda), which defines
// attnrt_flex_user::score_mod / mask_mod and ATTNRT_FLEX_HAS_SCORE_MOD.
#pragma once

#include <attnrt_cuda/score_policy.cuh>

namespace attnrt::cuda {

class FlexScores : public StandardScores {
 public:
  using Params = attnrt_flex::KernelParams;
  __device__ __forceinline__ FlexScores(const AttentionParams& params, const Seq& s, const Params& x)
      : StandardScores(params, s), x_(x), b_(static_cast<int>(blockIdx.z)), h_(static_cast<int>(blockIdx.y)) {}

  static constexpr bool kElementMask = true;
  __device__ __forceinline__ int first_block(int m0, int lo, int hi) const { return visit(m0, lo, hi); }
  __device__ __forceinline__ int next_block(int m0, int nb, int hi) const { return visit(m0, nb + 1, hi); }
  __device__ __forceinline__ bool block_element_mask(int m0, int nb) const {
    return x_.has_mask_mod && (x_.tile_state == nullptr || state(m0, nb) == attnrt_flex::kTilePartial);
  }
  __device__ __forceinline__ bool visible(int h, int i, int j) const {
    return attnrt_flex_user::mask_mod(x_.ctx, b_, h, i, j);
  }

  // score_mod on softmax_scale * q.k (natural log), then to the kernels' log2 domain.
  struct ModScores {
    const AttentionParams& p;
    const attnrt_flex::Context& ctx;
    int b, h;
    __device__ __forceinline__ float log2(float raw, int i, int j) const {
      return attnrt_flex_user::score_mod(ctx, raw * p.softmax_scale, b, h, i, j) * kLog2e;
    }
  };
  __device__ __forceinline__ bool linear() const { return !ATTNRT_FLEX_HAS_SCORE_MOD && StandardScores::linear(); }
  template <class Fn>
  __device__ __forceinline__ void with_scores(int h, Fn&& fn) const {
    fn(ModScores{p, x_.ctx, b_, h});
  }

 private:
  __device__ __forceinline__ unsigned char state(int m0, int nb) const {
    const int bb = x_.state_batch == 1 ? 0 : b_, hh = x_.state_heads == 1 ? 0 : h_;
    const long long row = (static_cast<long long>(bb) * x_.state_heads + hh) * x_.q_tiles + m0 / x_.tile_rows;
    return nb < x_.k_tiles ? x_.tile_state[row * x_.k_tiles + nb] : attnrt_flex::kTileSkip;
  }
  // The first tile at or after nb (before hi) that the block mask does not skip.
  __device__ __forceinline__ int visit(int m0, int nb, int hi) const {
    if (x_.tile_state == nullptr) return nb;
    while (nb < hi && state(m0, nb) == attnrt_flex::kTileSkip) ++nb;
    return nb;
  }

  const Params& x_;
  int b_, h_;
};

}  // namespace attnrt::cuda

// Per-tile states from a PyTorch BlockMask: one thread per (batch, head, mask query block) owns
// that block's tile rows (no races): all skipped, then the partial list, then the full list.
// Mask blocks are whole tiles (q_block = q_ratio * BM, kv_block = k_ratio * BN; the plugin
// checks). Entries outside the keys are ignored here; the CPU path reports them.
struct AttnrtFlexList {
  const int* num;
  const int* idx;
  long long num_stride[3], idx_stride[4];
  int width;  // idx's last extent: the most entries a count may name
};

extern "C" __global__ void attnrt_flex_tile_states(unsigned char* state, int batch, int heads, int q_blocks,
                                                   int q_ratio, int k_ratio, int q_tiles, int k_tiles,
                                                   AttnrtFlexList partial, AttnrtFlexList full, int has_full) {
  const long long id = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= static_cast<long long>(batch) * heads * q_blocks) return;
  const int m = static_cast<int>(id % q_blocks), h = static_cast<int>(id / q_blocks % heads),
            b = static_cast<int>(id / q_blocks / heads);
  const int k_blocks = (k_tiles + k_ratio - 1) / k_ratio;
  for (int r = 0; r < q_ratio && m * q_ratio + r < q_tiles; ++r) {
    unsigned char* row = state + ((static_cast<long long>(b) * heads + h) * q_tiles + m * q_ratio + r) * k_tiles;
    for (int n = 0; n < k_tiles; ++n) row[n] = attnrt_flex::kTileSkip;
  }
  for (int list = 0; list < (has_full ? 2 : 1); ++list) {
    const AttnrtFlexList& L = list == 0 ? partial : full;
    const unsigned char value = list == 0 ? attnrt_flex::kTilePartial : attnrt_flex::kTileFull;
    int count = L.num[b * L.num_stride[0] + h * L.num_stride[1] + m * L.num_stride[2]];
    count = count < 0 ? 0 : count > L.width ? L.width : count;
    for (int t = 0; t < count; ++t) {
      const int block = L.idx[b * L.idx_stride[0] + h * L.idx_stride[1] + m * L.idx_stride[2] + t * L.idx_stride[3]];
      if (block < 0 || block >= k_blocks) continue;
      for (int r = 0; r < q_ratio && m * q_ratio + r < q_tiles; ++r) {
        unsigned char* row = state + ((static_cast<long long>(b) * heads + h) * q_tiles + m * q_ratio + r) * k_tiles;
        for (int c = 0; c < k_ratio && block * k_ratio + c < k_tiles; ++c) row[block * k_ratio + c] = value;
      }
    }
  }
}
