// flex_attention on the CPU: the compiled mods' per-element entry points (mods.hpp, kHost) and a
// call's block mask, decoded once, applied to each score by the reference kernels (eager's loops,
// which take a flex::Eval through ForwardProblem::flex). Reference speed: one indirect call per
// visible element.
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/status.hpp>
#include <attnrt_kernels/flex/prelude_host.hpp>
#include <attnrt_kernels/layout.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace attnrt::kernels::flex {

// A compiled kHost unit's entry points (dlsym'ed); any may be NULL (an absent mod).
struct HostFns {
  float (*score)(const attnrt_flex::Context*, float, int, int, int, int) = nullptr;
  int (*mask)(const attnrt_flex::Context*, int, int, int, int) = nullptr;
  float (*grad)(const attnrt_flex::Context*, float, int, int, int, int) = nullptr;
};

class Eval {
 public:
  // `block` as validated by check_flex; its tensors are host memory. Throws
  // Error(ATTNRT_ERROR_INVALID_ARGUMENT) for a block-mask entry out of range (naming it).
  Eval(const HostFns& fns, const attnrt_flex_attention& block, const attnrt_attention_desc& desc);
  Eval(const Eval&) = delete;
  Eval& operator=(const Eval&) = delete;

  // The score of (b, h, i, j) given the descriptor's score s: score_mod(s), or -inf when the
  // block mask skips the pair's block or mask_mod hides it (not evaluated in a full block).
  float apply(float s, int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (!state_.empty()) {
      const uint8_t st = state(b, h, i / q_block_, j / kv_block_);
      if (st == kSkip) return -std::numeric_limits<float>::infinity();
      if (st == kFull) return score(s, b, h, i, j);
    }
    if (fns_.mask && !fns_.mask(&ctx_, int(b), int(h), int(i), int(j))) return -std::numeric_limits<float>::infinity();
    return score(s, b, h, i, j);
  }

  // The mods one at a time, without the block mask (the harness's fp64 reference applies them
  // per element, and its block-mask builder classifies blocks from mask()): mask_mod (true
  // without one) and score_mod (s without one).
  bool mask(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return !fns_.mask || fns_.mask(&ctx_, int(b), int(h), int(i), int(j));
  }
  float score(float s, int64_t b, int64_t h, int64_t i, int64_t j) const {
    return fns_.score ? fns_.score(&ctx_, s, int(b), int(h), int(i), int(j)) : s;
  }

  // d score_mod / d s at (b, h, i, j): score_mod_grad, or 1 without a score_mod.
  float grad(float s, int64_t b, int64_t h, int64_t i, int64_t j) const {
    return fns_.grad ? fns_.grad(&ctx_, s, int(b), int(h), int(i), int(j)) : 1.0f;
  }

  // Throws Error(ATTNRT_ERROR_INVALID_ARGUMENT) when a mod read an aux tensor out of its bounds
  // during the call (the read returned 0): the result is not what the mods say.
  void check_reads() const;

 private:
  static constexpr uint8_t kSkip = 0, kPartial = 1, kFull = 2;
  uint8_t state(int64_t b, int64_t h, int64_t m, int64_t n) const {
    const int64_t bb = batch_ == 1 ? 0 : b, hh = heads_ == 1 ? 0 : h;
    return state_[((bb * heads_ + hh) * q_blocks_ + m) * kv_blocks_ + n];
  }
  void mark(const DLTensor* num, const DLTensor* indices, const char* num_name, const char* indices_name,
            uint8_t value);

  HostFns fns_;
  attnrt_flex::Context ctx_{};
  mutable int error_ = 0;
  int64_t q_block_ = 1, kv_block_ = 1, batch_ = 0, heads_ = 0, q_blocks_ = 0, kv_blocks_ = 0;
  std::vector<uint8_t> state_;  // [batch_, heads_, q_blocks_, kv_blocks_]; empty: no block mask
};

}  // namespace attnrt::kernels::flex
