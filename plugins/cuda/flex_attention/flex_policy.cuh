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

// Per-block states from a PyTorch BlockMask: one thread per (batch, head, query block) owns that
// block's row (no races): all skipped, then the partial list, then the full list. Entries
// outside the keys are ignored here; the CPU path reports them. `counter` (the Hopper forward's
// tile counter, or NULL) is zeroed here too, which spares the call a memset.
struct AttnrtFlexList {
  const int* num;
  const int* idx;
  long long num_stride[3], idx_stride[4];
  int width;  // idx's last extent: the most entries a count may name
};

extern "C" __global__ void attnrt_flex_block_states(unsigned char* state, int batch, int heads, int q_blocks,
                                                    int k_blocks, AttnrtFlexList partial, AttnrtFlexList full,
                                                    int has_full, int* counter) {
  const long long id = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id == 0 && counter != nullptr) *counter = 0;
  if (id >= static_cast<long long>(batch) * heads * q_blocks) return;
  const int m = static_cast<int>(id % q_blocks), h = static_cast<int>(id / q_blocks % heads),
            b = static_cast<int>(id / q_blocks / heads);
  unsigned char* row = state + id * k_blocks;
  for (int n = 0; n < k_blocks; ++n) row[n] = attnrt_flex::kTileSkip;
  for (int list = 0; list < (has_full ? 2 : 1); ++list) {
    const AttnrtFlexList& L = list == 0 ? partial : full;
    const unsigned char value = list == 0 ? attnrt_flex::kTilePartial : attnrt_flex::kTileFull;
    int count = L.num[b * L.num_stride[0] + h * L.num_stride[1] + m * L.num_stride[2]];
    count = count < 0 ? 0 : count > L.width ? L.width : count;
    for (int t = 0; t < count; ++t) {
      const int block = L.idx[b * L.idx_stride[0] + h * L.idx_stride[1] + m * L.idx_stride[2] + t * L.idx_stride[3]];
      if (block >= 0 && block < k_blocks) row[block] = value;
    }
  }
}
