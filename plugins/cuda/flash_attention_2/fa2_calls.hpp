// The host side of a plugin built on flash_attention_2's kernels for one score policy: its
// backward workspace (backward_workspace.hpp), and the forward and backward calls from the ABI's
// descriptor to a kernel instantiation. flash_attention_2 (StandardScores) and sink (SinkScores) are each a class that
// declares its name and capabilities and forwards here, so neither repeats the other.
#pragma once

#include "fa2_launch.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_cuda/backward_workspace.hpp>
#include <attnrt_cuda/cuda_check.hpp>
#include <attnrt_cuda/make_params.hpp>

#include <cuda_runtime_api.h>

namespace attnrt::cuda::fa2 {

template <class Policy, class HeadDims>
struct Calls {
  static constexpr size_t kRowAlignment = 16;  // cp.async moves 16 bytes

  static size_t workspace_size(const attnrt_attention_desc& d, bool backward) {
    return BackwardWorkspace::size(d, backward);
  }

  static void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e,
                      const char* what) {
    use_device(d);
    const AttentionParams p = make_params(d, a, kRowAlignment);
    if (p.seqlen_q == 0 || p.batch == 0) return;
    HeadDims::dispatch(d.head_dim, [&](auto hd) {
      check_cuda(run_forward<Policy, decltype(hd)::value>(p, bf16(d), stream(e)), what);
    });
  }

  static void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e,
                       const char* what) {
    use_device(d);
    AttentionParams p = make_params(d, a, kRowAlignment);
    BackwardWorkspace::bind(d, e, p);
    if (BackwardWorkspace::nothing_to_differentiate(p, stream(e), what)) return;
    HeadDims::dispatch(d.head_dim, [&](auto hd) {
      check_cuda(run_backward<Policy, decltype(hd)::value>(p, bf16(d), stream(e)), what);
    });
  }

 private:
  static bool bf16(const attnrt_attention_desc& d) { return d.dtype == ATTNRT_DTYPE_BF16; }
  static cudaStream_t stream(const attnrt_exec& e) { return static_cast<cudaStream_t>(e.stream); }
};

}  // namespace attnrt::cuda::fa2
