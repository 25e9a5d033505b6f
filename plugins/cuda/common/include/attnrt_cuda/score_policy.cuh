// The score rule of a call as one policy type: everything a mainloop does between its products
// besides the online softmax itself. A mainloop (flash_attention_2's forward, dq and dK/dV
// kernels; flash_attention_3's on Hopper) is a template on its policy and asks it
//   - which key (or query) blocks a tile walks, and whether a tile needs the per-element mask;
//   - each element's mask, as a predicate per row (or per key for the transposed backward tiles);
//   - how a raw q.k product becomes a log2-domain logit, and that map's derivative;
//   - where each row's softmax starts (sinks) and how it ends (normalizer and LSE).
// It never reads the descriptor's score fields (softcap, window, sinks) itself, so attention
// variants are new policies, not copies of a kernel: StandardScores below is the ABI's rule
// (plugin_abi.h: scale, softcap, bottom-right causal / sliding window); the gpt-oss sink policy
// changes row_start, flex_attention's compiled mods change the mask and the score map. This is
// FlashAttention-3's split of features into Mask / Softmax template arguments and CUTLASS's
// FMHA "fusion" hooks (examples 77 and 88), as one type.
//
// Every hook is __forceinline__ and reads the kernel's parameters in place, so the standard
// policy compiles to the same instructions as the rule written into the kernel.
#pragma once

#include <attnrt_cuda/tile.cuh>

#include <climits>
#include <cmath>

namespace attnrt::cuda {

// A row's softmax state before its first key block: running max (in the units of the raw
// products the mainloop compares, see StandardScores::row_start) and running sum (the row's
// whole sum: a mainloop that splits a row's sum over several threads gives it to one of them).
struct RowStart {
  float max, sum;
};

// What the epilogue writes for a row, from its final running max and sum (in row_start's
// units, c as there): out = acc * inv(), and lse() in natural log, -inf for a row that saw
// nothing. Formed on demand: most threads of a warp write no LSE.
struct RowEnd {
  float max, sum, c;
  __device__ __forceinline__ float inv() const { return sum > 0.f ? 1.f / sum : 0.f; }
  __device__ __forceinline__ float lse() const { return sum > 0.f ? max * c * kLn2 + logf(sum) : -INFINITY; }
};

// The ABI's score map with softcap decided per tile (kCap = softcap > 0), Gemma 2's
// cap * tanh(s / cap) (plugin_abi.h). i, j (query row and key within the sequence) are what a
// position-dependent map (ALiBi, flex's score_mod) reads; this one does not, and the compiler
// drops them.
template <bool kCap>
struct SoftcapScores {
  const AttentionParams& p;

  // Raw q.k -> logit in the log2 domain of the kernels' exp2.
  __device__ __forceinline__ float log2(float raw, int /*i*/, int /*j*/) const {
    if constexpr (kCap) return p.softcap * kLog2e * tanhf(raw * scale_over_cap());
    return raw * (p.softmax_scale * kLog2e);
  }
  // d(logit)/d(raw) / softmax_scale, the factor dS takes on its way to dQ and dK: 1 - tanh^2
  // with softcap, else 1.
  __device__ __forceinline__ float grad(float raw, int /*i*/, int /*j*/) const {
    if constexpr (!kCap) return 1.0f;
    const float t = tanhf(raw * scale_over_cap());
    return 1.0f - t * t;
  }

 private:
  // softmax_scale / softcap, within 2 ulp (the fast division: no slow-path call). The kernels
  // pick kCap per tile, so the compiler hoists this out of their tile loops and computes it in
  // every call, softcap 0 included, where IEEE division took its slow path: a call into code
  // that is cold once per consumer warp (flash_attention_3's forward: 2.5% of its stall samples
  // in that routine, bench/results/flex-fixed-cost-2026-11-27 call 3).
  __device__ __forceinline__ float scale_over_cap() const { return __fdividef(p.softmax_scale, p.softcap); }
};

// What a policy needs besides AttentionParams, passed to the kernel as its second parameter (a
// flex_attention call's mods context and block states); the standard rule needs nothing.
struct NoParams {};

class StandardScores {
 public:
  using Params = NoParams;
  __device__ __forceinline__ StandardScores(const AttentionParams& params, const Seq& s, const NoParams& = {})
      : p(params), seq(s) {}

  // ---- Which tiles: the mask rule as one interval per row. Query i (of a sequence) sees key
  // j iff j < k_len, j <= i + diag + window_right (when >= 0) and j >= i + diag - window_left
  // (when >= 0); causal is window_right 0 (make_params).

  // Blocks [lo, hi) of `block` keys that any query in [m0, m0 + rows) sees (empty: lo == hi).
  __device__ __forceinline__ BlockRange key_blocks(int m0, int rows, int block) const {
    int n_lo = 0, n_hi = seq.k_len;
    if (p.window_right >= 0) n_hi = min(n_hi, m0 + rows - 1 + seq.diag + p.window_right + 1);
    if (p.window_left >= 0) n_lo = max(0, m0 + seq.diag - p.window_left);
    const int lo = n_lo / block;
    return {lo, n_hi > n_lo ? ceil_div(n_hi, block) : lo};
  }

  // Blocks of `block` queries that see any key in [n0, n0 + keys): the transpose of the above.
  __device__ __forceinline__ BlockRange query_blocks(int n0, int keys, int block) const {
    int i_lo = 0, i_hi = seq.q_len;
    if (p.window_right >= 0) i_lo = max(0, n0 - seq.diag - p.window_right);
    if (p.window_left >= 0) i_hi = min(i_hi, n0 + keys - 1 - seq.diag + p.window_left + 1);
    const int lo = i_lo / block;
    return {lo, i_hi > i_lo ? ceil_div(i_hi, block) : lo};
  }

  // ---- Block-sparse walks (flex_attention's block masks): inside key_blocks' range, the blocks a
  // query block at m0 visits, in order, and whether a visited block needs the per-element
  // predicate visible() besides the interval mask. The backward asks per tile of query head h
  // (rows m0.., keys n0..): whether it is skipped (nothing visible) and whether it needs
  // visible(). kElementMask false: the kernels compile none of it. Here: every block, none.
  static constexpr bool kElementMask = false;
  // flash_attention_3's walk of a block mask (fa3_forward.cuh), with its own hooks: none here.
  static constexpr bool kBlockSparse = false;
  __device__ __forceinline__ int first_block(int /*m0*/, int lo, int /*hi*/) const { return lo; }
  __device__ __forceinline__ int next_block(int /*m0*/, int nb, int /*hi*/) const { return nb + 1; }
  __device__ __forceinline__ bool block_element_mask(int /*m0*/, int /*nb*/) const { return false; }
  __device__ __forceinline__ bool tile_skipped(int /*h*/, int /*m0*/, int /*n0*/) const { return false; }
  __device__ __forceinline__ bool tile_element_mask(int /*h*/, int /*m0*/, int /*n0*/) const { return false; }
  __device__ __forceinline__ bool visible(int /*h*/, int /*i*/, int /*j*/) const { return true; }

  // Whether queries [m0, m0 + rows) x keys [n0, n0 + keys) cross a mask boundary (sequence end,
  // causal/window diagonal); tiles that do not skip the per-element test.
  __device__ __forceinline__ bool tile_needs_mask(int m0, int rows, int n0, int keys) const {
    return n0 + keys > seq.k_len || (p.window_right >= 0 && n0 + keys - 1 > m0 + seq.diag + p.window_right) ||
           (p.window_left >= 0 && n0 < m0 + rows - 1 + seq.diag - p.window_left);
  }

  // ---- Each element: the keys query i sees, and the queries that see key j, as intervals the
  // kernels test a tile's elements against (two compares with compile-time offsets).
  __device__ __forceinline__ Span row_mask(int /*h*/, int i) const {
    int lo = 0, hi = seq.k_len;
    if (p.window_right >= 0) hi = min(hi, i + seq.diag + p.window_right + 1);
    if (p.window_left >= 0) lo = max(lo, i + seq.diag - p.window_left);
    return {lo, hi};
  }

  __device__ __forceinline__ Span col_mask(int /*h*/, int j) const {
    if (j >= seq.k_len) return {0, 0};
    int lo = 0, hi = INT_MAX;
    if (p.window_right >= 0) lo = max(lo, j - seq.diag - p.window_right);
    if (p.window_left >= 0) hi = j - seq.diag + p.window_left + 1;
    return {lo, hi};
  }

  // ---- Scores. linear(): logits are softmax_scale * raw with a positive scale, so a forward
  // may take row maxima on the raw products and fold the scale into its exponent's FFMA.
  __device__ __forceinline__ bool linear() const { return p.softcap == 0.f && p.softmax_scale > 0.f; }

  // Calls fn(scores) with the map of head h's tiles, one branch per tile instead of per element.
  template <class Fn>
  __device__ __forceinline__ void with_scores(int /*h*/, Fn&& fn) const {
    if (p.softcap > 0)
      fn(SoftcapScores<true>{p});
    else
      fn(SoftcapScores<false>{p});
  }

  // ---- Softmax. The forward's running max is kept in the units of what it compares: raw
  // products when linear() (then c = softmax_scale * log2(e)), log2 logits otherwise (c = 1);
  // exp2(x * c - max * c) is a probability numerator. No sinks: nothing seen yet.
  __device__ __forceinline__ RowStart row_start(int /*h*/, float /*c*/) const { return {-INFINITY, 0.f}; }

  // A row's normalizer and LSE (RowEnd) from its final running max and sum.
  __device__ __forceinline__ RowEnd row_end(float max, float sum, float c) const { return {max, sum, c}; }

  // ---- Backward. Called once per query row (head h, index `row` in lse's layout) when its
  // D = rowsum(dO o O) is known, for the gradients of per-row terms (sinks); none here.
  __device__ __forceinline__ void on_row_d(int /*h*/, int64_t /*row*/, float /*d*/) const {}

 protected:
  const AttentionParams& p;
  const Seq& seq;
};

}  // namespace attnrt::cuda
