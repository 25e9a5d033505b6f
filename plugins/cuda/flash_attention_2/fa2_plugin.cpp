// The flash_attention_2 plugin: FlashAttention-2 (Dao 2023) on CUDA tensor cores (mma.sync,
// sm_80 and newer), fp16 and bf16, head_dim 32/64/96/128/192/256 (the build's list), GQA/MQA, bottom-right causal,
// sliding window, softcap, varlen, LSE; forward and backward: FlashAttention-2's single pass with
// dQ accumulated by fp32 atomics, or, when the call asks to be deterministic, a second dQ pass
// so that every output has one writer (fa2_backward.cuh). Anything else is refused by the
// support query with a reason, so the runtime falls back.
#include "fa2_calls.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt_cuda/head_dims.hpp>

#include <string>

namespace attnrt::plugins::fa2 {
namespace {

// The compiled head dims, from the build's one list (CMakeLists.txt).
using HeadDims = cuda::HeadDims<ATTNRT_FA2_HEAD_DIMS>;
using Calls = cuda::fa2::Calls<cuda::StandardScores, HeadDims>;

class FlashAttention2Plugin {
 public:
  static constexpr const char* kName = "flash_attention_2";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr const char* kDescription =
      "FlashAttention-2 on CUDA tensor cores (mma.sync, sm_80+): tiled online softmax, fp16/bf16";

  static constexpr attnrt_capabilities kCapabilities = sdk::capabilities(
      {.devices = ATTNRT_DEVICE_BIT_CUDA,
       .dtypes = ATTNRT_DTYPE_BIT_FP16 | ATTNRT_DTYPE_BIT_BF16,
       .features = ATTNRT_FEATURE_GQA | ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SLIDING_WINDOW | ATTNRT_FEATURE_SOFTCAP |
                   ATTNRT_FEATURE_VARLEN | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_BACKWARD | ATTNRT_FEATURE_DETERMINISTIC,
       .min_head_dim = HeadDims::kMin,
       .max_head_dim = HeadDims::kMax,
       .min_cuda_arch = 80});

  std::string supports(const attnrt_attention_desc& d) const { return HeadDims::gap(d.head_dim); }

  size_t workspace_size(const attnrt_attention_desc& d, bool backward, int /*num_threads*/) const {
    return Calls::workspace_size(d, backward);
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    Calls::forward(d, a, e, "flash_attention_2 forward");
  }

  void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e) {
    Calls::backward(d, a, e, "flash_attention_2 backward");
  }
};

}  // namespace
}  // namespace attnrt::plugins::fa2

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::fa2::FlashAttention2Plugin)
