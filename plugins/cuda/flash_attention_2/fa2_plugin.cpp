// The flash_attention_2 plugin: FlashAttention-2 (Dao 2023) on CUDA tensor cores (mma.sync,
// sm_80 and newer), fp16 and bf16, head_dim 32/64/96/128/192/256 (the build's list), GQA/MQA, bottom-right causal,
// sliding window, softcap, varlen, LSE; forward and backward: FlashAttention-2's single pass with
// dQ accumulated by fp32 atomics, or, when the call asks to be deterministic, a second dQ pass
// so that every output has one writer (fa2_backward.cuh). Anything else is refused by the
// support query with a reason, so the runtime falls back.
#include "fa2_launch.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_cuda/cuda_check.hpp>
#include <attnrt_cuda/head_dims.hpp>
#include <attnrt_cuda/make_params.hpp>

#include <string>

namespace attnrt::plugins::fa2 {
namespace {

using cuda::AttentionParams;
// The compiled head dims, from the build's one list (CMakeLists.txt).
using HeadDims = cuda::HeadDims<ATTNRT_FA2_HEAD_DIMS>;

constexpr size_t kRowAlignment = 16;  // cp.async moves 16 bytes

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
    if (!backward) return 0;
    return dq_accum_offset(d) + (d.deterministic ? 0 : rows(d) * size_t(d.head_dim) * sizeof(float));
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    cuda::use_device(d);
    const AttentionParams p = cuda::make_params(d, a, kRowAlignment);
    if (p.seqlen_q == 0 || p.batch == 0) return;
    HeadDims::dispatch(d.head_dim, [&](auto hd) {
      cuda::check_cuda(cuda::fa2::run_forward<cuda::StandardScores, decltype(hd)::value>(p, bf16(d), stream(e)),
                       "flash_attention_2 forward");
    });
  }

  void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e) {
    sdk::require_workspace(e, workspace_size(d, true, 0), 0);
    cuda::use_device(d);
    AttentionParams p = cuda::make_params(d, a, kRowAlignment);
    auto* ws = static_cast<unsigned char*>(e.workspace);
    p.softmax_d = reinterpret_cast<float*>(ws);
    if (!d.deterministic) p.dq_accum = reinterpret_cast<float*>(ws + dq_accum_offset(d));
    if (p.batch == 0 || (p.seqlen_q == 0 && p.seqlen_k == 0)) return;
    HeadDims::dispatch(d.head_dim, [&](auto hd) {
      cuda::check_cuda(cuda::fa2::run_backward<cuda::StandardScores, decltype(hd)::value>(p, bf16(d), stream(e)),
                       "flash_attention_2 backward");
    });
  }

 private:
  static bool bf16(const attnrt_attention_desc& d) { return d.dtype == ATTNRT_DTYPE_BF16; }

  // Backward workspace: D = rowsum(dO * O) per (head, query row), then (unless deterministic)
  // the fp32 dQ accumulator, head_dim floats per row. batch * max seqlen_q bounds the packed
  // length of a varlen call.
  static size_t rows(const attnrt_attention_desc& d) {
    return size_t(d.heads_q) * size_t(d.batch) * size_t(d.seqlen_q);
  }
  static size_t dq_accum_offset(const attnrt_attention_desc& d) {
    constexpr size_t kAlign = 256;
    return (rows(d) * sizeof(float) + kAlign - 1) / kAlign * kAlign;
  }
  static cudaStream_t stream(const attnrt_exec& e) { return static_cast<cudaStream_t>(e.stream); }
};

}  // namespace
}  // namespace attnrt::plugins::fa2

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::fa2::FlashAttention2Plugin)
