// The sdpa plugin's C++ class. Built for baseline x86-64: it checks the CPU before handing a
// call to the AVX2 kernels, and refuses with a reason (so the runtime falls back) where they
// cannot run.
#include "onednn_library.hpp"
#include "sdpa_kernels.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_kernels/append_kv.hpp>
#include <attnrt_kernels/reference_capabilities.hpp>
#include <attnrt_kernels/threads.hpp>
#include <attnrt_kernels/tile.hpp>

#include <string>

namespace attnrt::plugins::sdpa {
namespace {

std::string cpu_gap() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("f16c")) {
    return "this CPU lacks AVX2/FMA/F16C (x86-64-v3), which sdpa's kernels are built for";
  }
#endif
  return onednn_library().error;
}

int64_t packed_queries(const attnrt_attention_desc& d, const DLTensor* q) {
  return d.is_varlen ? q->shape[0] : static_cast<int64_t>(d.batch) * d.seqlen_q;
}

size_t backward_bytes(const attnrt_attention_desc& d, size_t threads, int64_t total_q) {
  return sizeof(float) *
         (threads * backward_floats_per_thread(d) + backward_floats_shared(d, total_q, static_cast<int>(threads)));
}

class SdpaPlugin {
 public:
  static constexpr const char* kName = "sdpa";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr const char* kDescription =
      "tiled online softmax on the CPU (FlashAttention-2's algorithm) with oneDNN's products, O(seqlen) memory, "
      "multithreaded";

  static constexpr attnrt_capabilities kCapabilities =
      sdk::capabilities({.devices = ATTNRT_DEVICE_BIT_CPU,
                         .dtypes = kernels::kReferenceDtypes,
                         .features = kernels::kReferenceCpuFeatures,
                         .max_head_dim = static_cast<int32_t>(kernels::kMaxTileHeadDim)});

  explicit SdpaPlugin(const attnrt_host_info& /*host*/) : cpu_gap_(cpu_gap()) {}

  // Beyond the capabilities: the kernels need x86-64-v3 (AVX2, FMA, F16C) and oneDNN, checked once.
  std::string supports(const attnrt_attention_desc& /*d*/) const { return cpu_gap_; }

  size_t workspace_size(const attnrt_attention_desc& d, bool backward, int num_threads) const {
    const size_t threads = static_cast<size_t>(kernels::resolve_threads(num_threads));
    if (!backward)
      return sizeof(float) *
             (threads * forward_floats_per_thread(d) + forward_floats_shared(d, static_cast<int>(threads)));
    // Without the q tensor, size the shared part for the largest packed length the descriptor
    // allows (batch * max_seqlen_q, also an upper bound for varlen).
    const int64_t total_q = static_cast<int64_t>(d.batch) * d.seqlen_q;
    return backward_bytes(d, threads, total_q);
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    const int threads = kernels::resolve_threads(e.num_threads);
    sdk::require_workspace(e, workspace_size(d, false, threads), threads);
    sdpa::forward(kernels::make_forward_problem(d, a), static_cast<float*>(e.workspace), threads);
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
    sdk::require_workspace(e, backward_bytes(d, static_cast<size_t>(threads), packed_queries(d, a.q)), threads);
    sdpa::backward(kernels::make_backward_problem(d, a), static_cast<float*>(e.workspace), threads);
  }

 private:
  std::string cpu_gap_;
};

}  // namespace
}  // namespace attnrt::plugins::sdpa

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::sdpa::SdpaPlugin)
