// The eager plugin's C++ class: capabilities, support query, workspace and dispatch.
#include "eager_kernels.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_kernels/append_kv.hpp>
#include <attnrt_kernels/reference_capabilities.hpp>

#include <string>

namespace attnrt::plugins::eager {
namespace {

constexpr int32_t kMaxHeadDim = 1024;

class EagerPlugin {
 public:
  static constexpr const char* kName = "eager";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr const char* kDescription =
      "materialized scores on the CPU: the readable reference and debugging path";

  static constexpr attnrt_capabilities kCapabilities = sdk::capabilities({.devices = ATTNRT_DEVICE_BIT_CPU,
                                                                          .dtypes = kernels::kReferenceDtypes,
                                                                          .features = kernels::kReferenceCpuFeatures,
                                                                          .max_head_dim = kMaxHeadDim});

  std::string supports(const attnrt_attention_desc& d) const {
    // The score matrix of one head is materialized: refuse what would not fit in 4 GiB.
    const double bytes = 4.0 * d.seqlen_q * d.seqlen_k;
    if (bytes > 4.0 * (1ull << 30)) {
      return "score matrix of " + std::to_string(d.seqlen_q) + " x " + std::to_string(d.seqlen_k) +
             " fp32 exceeds eager's 4 GiB limit per head";
    }
    return "";
  }

  size_t workspace_size(const attnrt_attention_desc& d, bool backward, int num_threads) const {
    const size_t threads = static_cast<size_t>(kernels::resolve_threads(num_threads));
    return sizeof(float) * (threads * workspace_floats_per_thread(d, backward) + workspace_floats_shared(d, backward));
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    const int threads = kernels::resolve_threads(e.num_threads);
    sdk::require_workspace(e, workspace_size(d, false, threads), threads);
    eager::forward(kernels::make_forward_problem(d, a), static_cast<float*>(e.workspace), threads);
  }

  // ABI 1.2: writes new tokens into a paged cache through their slots (append_kv.hpp).
  void append_kv(const attnrt_attention_desc& d, const attnrt_append_kv_args& a, const attnrt_exec& /*e*/) {
    kernels::append_kv(d, a);
  }

  void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e) {
    if (d.is_paged) {
      throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, "backward through a paged KV cache is not supported");
    }
    const int threads = kernels::resolve_threads(e.num_threads);
    sdk::require_workspace(e, workspace_size(d, true, threads), threads);
    eager::backward(kernels::make_backward_problem(d, a), static_cast<float*>(e.workspace), threads);
  }
};

}  // namespace
}  // namespace attnrt::plugins::eager

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::eager::EagerPlugin)
