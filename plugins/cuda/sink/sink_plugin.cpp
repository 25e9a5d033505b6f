// The sink plugin: attention with gpt-oss's learned per-head sink logits (OpenAI, gpt-oss model
// card 2025: a logit per query head in every row's softmax denominator, none in the numerator),
// forward and backward with dsinks, on CUDA tensor cores. It runs flash_attention_2's kernels
// (FlashAttention-2, Dao 2023; sm_80 and newer) under the sink score policy
// (attnrt_cuda/sink_policy.cuh): the same mainloops, no copy of them. fp16 and bf16 with float32
// sinks, head_dim 64 (gpt-oss) and 128, GQA/MQA (gpt-oss: 64 query heads over 8), bottom-right
// causal, sliding window (Hugging Face's sliding_window=W is window_left W-1), softcap, varlen,
// LSE (the sink included), deterministic backward (dsinks is always summed in a fixed order).
// A call without sinks is plain attention. The rest is refused with a reason.
#include <attnrt/plugin.hpp>
#include <attnrt_cuda/head_dims.hpp>

#include <string>

namespace attnrt::cuda {
class SinkScores;  // sink_policy.cuh, compiled into the kernel library
}

#include "fa2_calls.hpp"

namespace attnrt::plugins::sink {
namespace {

using HeadDims = cuda::HeadDims<ATTNRT_SINK_HEAD_DIMS>;
using Calls = cuda::fa2::Calls<cuda::SinkScores, HeadDims>;

class SinkPlugin {
 public:
  static constexpr const char* kName = "sink";
  static constexpr const char* kVersion = "1.0.0";
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
    return Calls::workspace_size(d, backward);
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    Calls::forward(d, a, e, "sink forward");
  }

  void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e) {
    Calls::backward(d, a, e, "sink backward");
  }
};

}  // namespace
}  // namespace attnrt::plugins::sink

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::sink::SinkPlugin)
