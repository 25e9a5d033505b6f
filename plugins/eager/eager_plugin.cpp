// The eager plugin's C++ class: capabilities, support query, workspace and dispatch.
#include "eager_kernels.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>

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

  static attnrt_capabilities capabilities() {
    attnrt_capabilities c{};
    c.struct_size = sizeof c;
    c.devices = ATTNRT_DEVICE_BIT_CPU;
    c.dtypes = ATTNRT_DTYPE_BIT_FP32 | ATTNRT_DTYPE_BIT_FP16 | ATTNRT_DTYPE_BIT_BF16;
    c.features = ATTNRT_FEATURE_GQA | ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SLIDING_WINDOW |
                 ATTNRT_FEATURE_SOFTCAP | ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_ALIBI |
                 ATTNRT_FEATURE_VARLEN | ATTNRT_FEATURE_PAGED_KV | ATTNRT_FEATURE_LSE |
                 ATTNRT_FEATURE_BACKWARD | ATTNRT_FEATURE_DETERMINISTIC | ATTNRT_FEATURE_HEAD_DIM_V;
    c.min_head_dim = 1;
    c.max_head_dim = kMaxHeadDim;
    return c;
  }

  explicit EagerPlugin(const attnrt_host_info& /*host*/) {}

  std::string supports(const attnrt_attention_desc& d) const {
    sdk::check_desc(d);
    static const attnrt_capabilities caps = capabilities();
    if (std::string gap = sdk::capability_gap(caps, d); !gap.empty()) return gap;
    // The score matrix of one head is materialized: refuse what would not fit in 4 GiB.
    const double bytes = 4.0 * d.seqlen_q * d.seqlen_k;
    if (bytes > 4.0 * (1ull << 30)) {
      return "score matrix of " + std::to_string(d.seqlen_q) + " x " + std::to_string(d.seqlen_k) +
             " fp32 exceeds eager's 4 GiB limit per head";
    }
    return "";
  }

  size_t workspace_size(const attnrt_attention_desc& d, bool backward, int num_threads) const {
    sdk::check_desc(d);
    const size_t threads = static_cast<size_t>(kernels::resolve_threads(num_threads));
    return sizeof(float) * (threads * workspace_floats_per_thread(d, backward) +
                            workspace_floats_shared(d, backward));
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    sdk::check_forward(d, a);
    sdk::require_supported(supports(d));
    const int threads = kernels::resolve_threads(e.num_threads);
    sdk::require_workspace(e, workspace_size(d, false, threads), threads);
    eager::forward(kernels::make_forward_problem(d, a), static_cast<float*>(e.workspace), threads);
  }

  void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e) {
    sdk::check_backward(d, a);
    sdk::require_supported(supports(d));
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
