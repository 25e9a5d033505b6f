// The host side of a plugin built on flash_attention_2's kernels for one score policy: its
// backward workspace, and the forward and backward calls from the ABI's descriptor to a kernel
// instantiation. flash_attention_2 (StandardScores) and sink (SinkScores) are each a class that
// declares its name and capabilities and forwards here, so neither repeats the other.
#pragma once

#include "fa2_launch.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_cuda/cuda_check.hpp>
#include <attnrt_cuda/make_params.hpp>

#include <cuda_runtime_api.h>

namespace attnrt::cuda::fa2 {

template <class Policy, class HeadDims>
struct Calls {
  static constexpr size_t kRowAlignment = 16;  // cp.async moves 16 bytes
  static constexpr size_t kAlign = 256;

  // Backward workspace: D = rowsum(dO * O) per (head, query row); then, unless deterministic,
  // the fp32 dQ accumulator, head_dim floats per row; then, with sinks, each row's share of
  // dsinks. batch * max seqlen_q bounds the packed length of a varlen call.
  static size_t rows(const attnrt_attention_desc& d) {
    return size_t(d.heads_q) * size_t(d.batch) * size_t(d.seqlen_q);
  }
  static size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
  static size_t dq_accum_offset(const attnrt_attention_desc& d) { return aligned(rows(d) * sizeof(float)); }
  static size_t dsink_rows_offset(const attnrt_attention_desc& d) {
    return dq_accum_offset(d) + (d.deterministic ? 0 : aligned(rows(d) * size_t(d.head_dim) * sizeof(float)));
  }
  static size_t workspace_size(const attnrt_attention_desc& d, bool backward) {
    if (!backward) return 0;
    return dsink_rows_offset(d) + (d.has_sinks ? rows(d) * sizeof(float) : 0);
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
    sdk::require_workspace(e, workspace_size(d, true), 0);
    use_device(d);
    AttentionParams p = make_params(d, a, kRowAlignment);
    auto* ws = static_cast<unsigned char*>(e.workspace);
    p.softmax_d = reinterpret_cast<float*>(ws);
    if (!d.deterministic) p.dq_accum = reinterpret_cast<float*>(ws + dq_accum_offset(d));
    if (d.has_sinks) p.dsink_rows = reinterpret_cast<float*>(ws + dsink_rows_offset(d));
    if (p.batch == 0 || (p.seqlen_q == 0 && p.seqlen_k == 0)) {
      // Nothing to differentiate: dsinks is still an output, and its value is zero.
      if (p.dsinks) check_cuda(cudaMemsetAsync(p.dsinks, 0, size_t(d.heads_q) * sizeof(float), stream(e)), what);
      return;
    }
    HeadDims::dispatch(d.head_dim, [&](auto hd) {
      check_cuda(run_backward<Policy, decltype(hd)::value>(p, bf16(d), stream(e)), what);
    });
  }

 private:
  static bool bf16(const attnrt_attention_desc& d) { return d.dtype == ATTNRT_DTYPE_BF16; }
  static cudaStream_t stream(const attnrt_exec& e) { return static_cast<cudaStream_t>(e.stream); }
};

}  // namespace attnrt::cuda::fa2
