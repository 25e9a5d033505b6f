// The sink plugin: attention with gpt-oss's learned per-head sink logits (OpenAI, gpt-oss model
// card 2025: a logit per query head in every row's softmax denominator, none in the numerator),
// forward and backward with dsinks, on CUDA tensor cores, under the sink score policy
// (attnrt_cuda/sink_policy.cuh) on two kernel families, the same mainloops and no copy of them:
// on Hopper flash_attention_3's (FlashAttention-3, Shah et al. 2024; sm_90a: TMA, wgmma), except
// deterministic backwards; everywhere else, and for those, flash_attention_2's (FlashAttention-2,
// Dao 2023; sm_80 and newer). ATTNRT_SINK_KERNELS=flash_attention_2 forces the second on Hopper
// too (read per call; the GPU tests run both families there). fp16 and bf16 with float32
// sinks, head_dim 64 (gpt-oss) and 128, GQA/MQA (gpt-oss: 64 query heads over 8), bottom-right
// causal, sliding window (Hugging Face's sliding_window=W is window_left W-1), softcap, varlen,
// LSE (the sink included), deterministic backward (dsinks is always summed in a fixed order).
// A call without sinks is plain attention. The rest is refused with a reason.
#include <attnrt/plugin.hpp>
#include <attnrt_cuda/backward_workspace.hpp>
#include <attnrt_cuda/head_dims.hpp>

#include <cstdlib>
#include <string>
#include <string_view>

namespace attnrt::cuda {
class SinkScores;  // sink_policy.cuh, compiled into the kernel library
}

#include "fa2_calls.hpp"
#if ATTNRT_SINK_HOPPER
#include "fa3_calls.hpp"
#endif

namespace attnrt::plugins::sink {
namespace {

using HeadDims = cuda::HeadDims<ATTNRT_SINK_HEAD_DIMS>;
using Fa2 = cuda::fa2::Calls<cuda::SinkScores, HeadDims>;
#if ATTNRT_SINK_HOPPER
using Fa3 = cuda::fa3::Calls<cuda::SinkScores, HeadDims>;
#endif

// Whether flash_attention_3's kernels take the call: Hopper, not forced off, and (backward) a
// call their backward covers (Fa3::backward_gap: head_dim 64 and 128, not deterministic).
bool on_hopper_kernels(const attnrt_attention_desc& d, bool backward) {
#if ATTNRT_SINK_HOPPER
  if (d.cuda_arch != 90) return false;
  const char* force = std::getenv("ATTNRT_SINK_KERNELS");
  if (force && std::string_view(force) == "flash_attention_2") return false;
  return !backward || Fa3::backward_gap(d).empty();
#else
  (void)d;
  (void)backward;
  return false;
#endif
}

class SinkPlugin {
 public:
  static constexpr const char* kName = "sink";
  static constexpr const char* kVersion = "1.1.0";
  static constexpr const char* kDescription =
      "gpt-oss attention sinks (learned per-head softmax sink logits) on CUDA tensor cores, forward and backward";

  static constexpr attnrt_capabilities kCapabilities =
      sdk::capabilities({.devices = ATTNRT_DEVICE_BIT_CUDA,
                         .dtypes = ATTNRT_DTYPE_BIT_FP16 | ATTNRT_DTYPE_BIT_BF16,
                         .features = ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_GQA | ATTNRT_FEATURE_CAUSAL |
                                     ATTNRT_FEATURE_SLIDING_WINDOW | ATTNRT_FEATURE_SOFTCAP | ATTNRT_FEATURE_VARLEN |
                                     ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_BACKWARD | ATTNRT_FEATURE_DETERMINISTIC,
                         .min_head_dim = HeadDims::kMin,
                         .max_head_dim = HeadDims::kMax,
                         .min_cuda_arch = 80});

  std::string supports(const attnrt_attention_desc& d) const { return HeadDims::gap(d.head_dim); }

  size_t workspace_size(const attnrt_attention_desc& d, bool backward, int /*num_threads*/) const {
#if ATTNRT_SINK_HOPPER
    // The Hopper forward's tile counter (fa3_calls.hpp); the sm_80 forward needs none.
    if (!backward) return Fa3::workspace_size(d, false);
#endif
    return cuda::BackwardWorkspace::size(d, backward);  // both families' layout
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
#if ATTNRT_SINK_HOPPER
    if (on_hopper_kernels(d, false)) return Fa3::forward(d, a, e, "sink forward (flash_attention_3 kernels)");
#endif
    Fa2::forward(d, a, e, "sink forward");
  }

  void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e) {
#if ATTNRT_SINK_HOPPER
    if (on_hopper_kernels(d, true)) return Fa3::backward(d, a, e, "sink backward (flash_attention_3 kernels)");
#endif
    Fa2::backward(d, a, e, "sink backward");
  }
};

}  // namespace
}  // namespace attnrt::plugins::sink

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::sink::SinkPlugin)
