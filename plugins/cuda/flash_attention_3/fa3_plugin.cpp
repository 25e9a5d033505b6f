// The flash_attention_3 plugin: FlashAttention-3 (Shah et al. 2024) on Hopper (sm_90a): TMA
// loads into an mbarrier pipeline, wgmma for S = Q K^T and O = P V with P from registers, a
// producer warpgroup and two consumer warpgroups with setmaxnreg (fa3_forward.cuh); fp16 and
// bf16, the build's head dims (and multiples of 8 within a quarter below one: 96 on the 128
// kernel), GQA/MQA, bottom-right causal, sliding window, softcap, varlen, LSE, paged KV
// forward (page sizes that are multiples of the key block, 128 keys at head_dim <= 128; packed
// queries too). Backward on the same machinery (fa3_backward.cuh) at head_dim 64 and 128,
// deterministic on request (dQ's additions in a fixed order); at head dims without its tiles
// (96, 192, 256) flash_attention_2's backward kernels (fa2_backward); elsewhere refused with the
// reason.
#include "fa2_calls.hpp"
#include "fa3_calls.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt_cuda/head_dims.hpp>

#include <string>

namespace attnrt::plugins::fa3 {
namespace {

using HeadDims = cuda::HeadDims<ATTNRT_FA3_HEAD_DIMS>;
using Calls = cuda::fa3::Calls<cuda::StandardScores, HeadDims>;
using Fa2HeadDims = cuda::HeadDims<ATTNRT_FA2_HEAD_DIMS>;
using Fa2 = cuda::fa2::Calls<cuda::StandardScores, Fa2HeadDims>;

// Whether a backward runs flash_attention_2's kernels: where this family's has no tiles (head_dim
// 96, 192, 256) and those kernels were compiled for the head_dim. The backward needs only q, k,
// v, out, dout and the ABI's lse, which both families' forwards write alike, so a training step
// at those head dims keeps this forward (faster than flash_attention_2's) rather than failing
// at its backward, which resolution cannot foresee (the descriptor does not say that a backward
// will follow).
bool fa2_backward(const attnrt_attention_desc& d) {
  return !d.is_paged && !Calls::backward_gap(d).empty() && Fa2HeadDims::contains(d.head_dim);
}

class FlashAttention3Plugin {
 public:
  static constexpr const char* kName = "flash_attention_3";
  static constexpr const char* kVersion = "0.2.0";
  static constexpr const char* kDescription =
      "FlashAttention-3 on Hopper (sm_90a): TMA, wgmma, warp-specialized producer/consumer; forward and backward, "
      "fp16/bf16";

  static constexpr attnrt_capabilities kCapabilities = sdk::capabilities(
      {.devices = ATTNRT_DEVICE_BIT_CUDA,
       .dtypes = ATTNRT_DTYPE_BIT_FP16 | ATTNRT_DTYPE_BIT_BF16,
       .features = ATTNRT_FEATURE_GQA | ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SLIDING_WINDOW | ATTNRT_FEATURE_SOFTCAP |
                   ATTNRT_FEATURE_VARLEN | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_BACKWARD | ATTNRT_FEATURE_DETERMINISTIC |
                   ATTNRT_FEATURE_PAGED_KV | ATTNRT_FEATURE_PAGED_VARLEN_Q,
       .min_head_dim = HeadDims::kMin * 3 / 4,  // padded onto the smallest kernel (forward_kernel_dim)
       .max_head_dim = HeadDims::kMax,
       .min_cuda_arch = 90,
       .max_cuda_arch = 90});  // sm_90a code runs on sm_90 only

  std::string supports(const attnrt_attention_desc& d) const { return Calls::forward_gap(d); }

  size_t workspace_size(const attnrt_attention_desc& d, bool backward, int /*num_threads*/) const {
    if (backward && fa2_backward(d)) return Fa2::workspace_size(d, true);
    return Calls::workspace_size(d, backward);
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    Calls::forward(d, a, e, "flash_attention_3 forward");
  }

  void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e) {
    if (fa2_backward(d)) return Fa2::backward(d, a, e, "flash_attention_3 backward (flash_attention_2's kernels)");
    Calls::backward(d, a, e, "flash_attention_3 backward");
  }
};

}  // namespace
}  // namespace attnrt::plugins::fa3

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::fa3::FlashAttention3Plugin)
