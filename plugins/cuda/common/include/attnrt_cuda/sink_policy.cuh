// gpt-oss attention sinks as a score policy: a learned logit per query head that joins every
// row's softmax denominator and no numerator (plugin_abi.h: p_ij = exp(s_ij) / (exp(sink_h) +
// sum_j exp(s_ij)), lse_i = log(exp(sink_h) + sum_j exp(s_ij))). Everything else is the ABI's
// standard rule, so a mainloop built for StandardScores runs sinks unchanged:
//   - forward: each row's softmax starts with the sink already in it (running max at the sink,
//     running sum 1; FlashAttention-3's and vLLM's way), so the rescaling, the normalizer and the
//     LSE take it in with no extra pass, and a row that sees no key ends with out 0, lse sink_h;
//   - backward: P = exp(S - lse) already divides by the sink's share, and dS = P (dP - D) holds
//     as is (the sink has no value row, so it adds nothing to dP or D). The sink's own gradient
//     is dsink_h = -sum over rows of exp(sink_h - lse_i) * D_i (FlashAttention-4's learnable-sink
//     backward): each row writes its share here, and the launcher sums them per head in a fixed
//     order (deterministic).
#pragma once

#include <attnrt_cuda/score_policy.cuh>

namespace attnrt::cuda {

class SinkScores : public StandardScores {
 public:
  using StandardScores::StandardScores;

  // The sink as the row's first "key": exp(sink) = exp2(start.max * c) with sum 1. A sink of -inf
  // is no sink at all (plain attention).
  __device__ __forceinline__ RowStart row_start(int h, float c) const {
    const float sink = p.sinks[h];
    if (sink == -INFINITY) return {-INFINITY, 0.f};
    return {sink * kLog2e / c, 1.f};
  }

  __device__ __forceinline__ void on_row_d(int h, int64_t row, float d) const {
    const float sink = p.sinks[h], lse = p.lse[row];
    p.dsink_rows[row] = sink == -INFINITY || lse == -INFINITY ? 0.f : -__expf(sink - lse) * d;
  }
};

}  // namespace attnrt::cuda
