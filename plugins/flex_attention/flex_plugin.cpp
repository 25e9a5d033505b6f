// flex_attention on the CPU: PyTorch's FlexAttention semantics (the ABI 1.3 extension block,
// plugin_abi.h attnrt_flex_attention) at reference speed, for tests and for hosts without a GPU.
// The user's mods are compiled with the system C++ compiler (flex/host_compiler.hpp) from the same
// translation unit the CUDA plugin gives NVRTC (kernels/flex/mods.hpp), and applied to each
// score by eager's loops (the readable path; flex/eval.hpp). Without a flex block it is eager.
// create_block_mask (ABI 1.4) evaluates the same compiled mask_mod (flex/block_mask.hpp).
#include "../eager/eager_kernels.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_kernels/flex/block_mask.hpp>
#include <attnrt_kernels/flex/eval.hpp>
#include <attnrt_kernels/flex/host_compiler.hpp>
#include <attnrt_kernels/reference_capabilities.hpp>

#include <memory>
#include <optional>
#include <string>

namespace attnrt::plugins::flex_cpu {
namespace {

constexpr int32_t kMaxHeadDim = 1024;

class FlexAttentionCpu {
 public:
  static constexpr const char* kName = "flex_attention";
  static constexpr const char* kVersion = "0.2.0";
  static constexpr const char* kDescription =
      "PyTorch FlexAttention's score_mod / mask_mod / block mask on the CPU (mods compiled by the system C++ "
      "compiler; reference speed)";
  static constexpr uint32_t kExtensions[] = {ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION};
  static constexpr attnrt_capabilities kCapabilities = sdk::capabilities(
      {.devices = ATTNRT_DEVICE_BIT_CPU,
       .dtypes = kernels::kReferenceDtypes,
       .features = kernels::kReferenceFeatures | ATTNRT_FEATURE_FLEX_ATTENTION | ATTNRT_FEATURE_CREATE_BLOCK_MASK,
       .max_head_dim = kMaxHeadDim});

  FlexAttentionCpu() : compiler_(kVersion) {}

  // The mods compile (compiling them now, when first seen, so that a call never waits on the
  // compiler), and the score matrix of one head fits eager's limit.
  std::string supports(const attnrt_attention_desc& d) const {
    const double bytes = 4.0 * d.seqlen_q * d.seqlen_k;
    if (bytes > 4.0 * (1ull << 30)) {
      return "score matrix of " + std::to_string(d.seqlen_q) + " x " + std::to_string(d.seqlen_k) +
             " fp32 exceeds the CPU flex_attention's 4 GiB limit per head";
    }
    try {
      compiled(d);
    } catch (const sdk::Error& e) {
      return e.what();
    }
    return "";
  }

  size_t workspace_size(const attnrt_attention_desc& d, bool backward, int num_threads) const {
    const size_t threads = static_cast<size_t>(kernels::resolve_threads(num_threads));
    return sizeof(float) *
           (threads * eager::workspace_floats_per_thread(d, backward) + eager::workspace_floats_shared(d, backward));
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    const int threads = kernels::resolve_threads(e.num_threads);
    sdk::require_workspace(e, workspace_size(d, false, threads), threads);
    kernels::ForwardProblem p = kernels::make_forward_problem(d, a);
    const std::unique_ptr<kernels::flex::Eval> eval = make_eval(d);
    p.flex = eval.get();
    eager::forward(p, static_cast<float*>(e.workspace), threads);
    if (eval) eval->check_reads();
  }

  void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e) {
    if (d.is_paged) throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, "backward through a paged KV cache is not supported");
    if (const attnrt_flex_attention* f = sdk::flex_block(d);
        f && f->score_mod && *f->score_mod && !(f->score_mod_grad && *f->score_mod_grad)) {
      throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED,
                       "flex_attention backward with a score_mod needs score_mod_grad (d score_mod / d score), "
                       "which the call does not give");
    }
    const int threads = kernels::resolve_threads(e.num_threads);
    sdk::require_workspace(e, workspace_size(d, true, threads), threads);
    kernels::BackwardProblem p = kernels::make_backward_problem(d, a);
    const std::unique_ptr<kernels::flex::Eval> eval = make_eval(d);
    p.flex = eval.get();
    eager::backward(p, static_cast<float*>(e.workspace), threads);
    if (eval) eval->check_reads();
  }

  // PyTorch's create_block_mask with the call's compiled mask_mod (flex/block_mask.hpp).
  void create_block_mask(const attnrt_attention_desc& d, const attnrt_block_mask_args& a, const attnrt_exec& e) {
    const std::unique_ptr<kernels::flex::Eval> eval = make_eval(d);
    const attnrt_flex_attention* f = sdk::flex_block(d);
    kernels::flex::create_block_mask(*eval, f->mask_mod && *f->mask_mod, d, a, kernels::resolve_threads(e.num_threads));
  }

 private:
  // The call's compiled mods; null without a flex block or without mods.
  std::shared_ptr<const kernels::flex::CompiledMods> compiled(const attnrt_attention_desc& d) const {
    const attnrt_flex_attention* f = sdk::flex_block(d);
    if (f == nullptr) return nullptr;
    const kernels::flex::Mods mods = kernels::flex::Mods::from_block(*f);
    if (mods.empty() && mods.score_mod_grad.empty()) return nullptr;
    return compiler_.get(mods);
  }

  std::unique_ptr<kernels::flex::Eval> make_eval(const attnrt_attention_desc& d) const {
    const attnrt_flex_attention* f = sdk::flex_block(d);
    if (f == nullptr) return nullptr;
    const std::shared_ptr<const kernels::flex::CompiledMods> mods = compiled(d);
    return std::make_unique<kernels::flex::Eval>(mods ? mods->fns : kernels::flex::HostFns{}, *f, d);
  }

  mutable kernels::flex::HostCompiler compiler_;  // thread-safe; compiles on first sight of mods
};

}  // namespace
}  // namespace attnrt::plugins::flex_cpu

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::flex_cpu::FlexAttentionCpu)
