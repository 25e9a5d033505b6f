// Host entry points of the flash_attention_2 kernels for a score policy (score_policy.cuh) and a
// head_dim, one translation unit per instantiation (fa2_hd<N>.cu) so the build compiles them in
// parallel. All launches are asynchronous on
// `stream`; they return the first error of a launch (the plugin turns it into ATTNRT_ERROR_DEVICE).
#pragma once

#include <attnrt_cuda/params.hpp>

#include <cuda_runtime_api.h>

namespace attnrt::cuda {
class StandardScores;  // the ABI's score rule (score_policy.cuh)
}

namespace attnrt::cuda::fa2 {

// Forward: writes p.out and, when p.lse is set, p.lse.
template <class Policy, int HD>
cudaError_t run_forward(const AttentionParams& p, bool bf16, cudaStream_t stream);

// Backward: p.softmax_d must point at a workspace of lse's size; writes dq, dk, dv. With
// p.dq_accum set (lse's size x head_dim floats, 8-byte aligned) dQ is accumulated there by
// atomics in the dK/dV pass (fast, not bit-reproducible); without it, a separate dQ pass.
template <class Policy, int HD>
cudaError_t run_backward(const AttentionParams& p, bool bf16, cudaStream_t stream);

}  // namespace attnrt::cuda::fa2
