// Merging partial attention results by their log-sum-exp: the one piece of math that makes
// attention over a split key sequence exact (Milakov & Gimelshein 2018's online softmax, as
// FlashAttention's split-KV combine and Ring Attention use it).
//
// Two partial results over disjoint key sets A and B of one query row,
//   out_A = sum_{j in A} exp(s_j - lse_A) v_j,   lse_A = log sum_{j in A} exp(s_j)   (B alike),
// give the result over A u B:
//   lse = log(exp(lse_A) + exp(lse_B)) = m + log1p(exp(min - m)),  m = max(lse_A, lse_B)
//   out = exp(lse_A - lse) out_A + exp(lse_B - lse) out_B
// Numerically safe: every exponent is <= 0, so nothing overflows whatever the scores' scale; a
// side with no visible key (lse -inf, out 0) gets weight exactly 0; two such sides give lse -inf
// and out 0 (the ABI's convention for a row with no visible key), never NaN; a NaN stays NaN.
//
// The functions below are the whole of the math, inline and free of library calls other than
// <math.h>, so that a CUDA kernel includes this header and runs the very same code on the device
// (ATTNRT_HOST_DEVICE becomes __host__ __device__ under nvcc); BlockOps::merge (block_ops.hpp)
// applies it to tensors on the host.
#pragma once

#include <math.h>

#ifndef ATTNRT_HOST_DEVICE
#if defined(__CUDACC__)
#define ATTNRT_HOST_DEVICE __host__ __device__
#else
#define ATTNRT_HOST_DEVICE
#endif
#endif

namespace attnrt::cp {

// The merged LSE and the weights of each side's out.
struct LseMergeWeights {
  float lse;
  float scale_acc;   // weight of the accumulated out (exp(lse_acc - lse))
  float scale_part;  // weight of the partial out (exp(lse_part - lse))
};

ATTNRT_HOST_DEVICE inline LseMergeWeights lse_merge_weights(float lse_acc, float lse_part) {
  if (lse_acc != lse_acc || lse_part != lse_part) return {NAN, NAN, NAN};  // NaN in, NaN out
  if (lse_acc == -INFINITY && lse_part == -INFINITY) return {-INFINITY, 0.0f, 0.0f};
  const float m = lse_acc > lse_part ? lse_acc : lse_part;
  const float lo = lse_acc > lse_part ? lse_part : lse_acc;
  const float lse = m + log1pf(expf(lo - m));  // lo - m <= 0 (-inf for an empty side: expf gives 0)
  return {lse, expf(lse_acc - lse), expf(lse_part - lse)};
}

// One element of a row's out under the row's weights. A side of weight 0 adds nothing, even
// where its out is not finite (never written). The CUDA merge kernel calls this per element.
ATTNRT_HOST_DEVICE inline float lse_merge_element(const LseMergeWeights& w, float out_acc, float out_part) {
  const float a = w.scale_acc == 0.0f ? 0.0f : w.scale_acc * out_acc;
  const float b = w.scale_part == 0.0f ? 0.0f : w.scale_part * out_part;
  return a + b;
}

// One row: out_acc[0, dim) and lse_acc become the merge of themselves with the partial row.
ATTNRT_HOST_DEVICE inline void lse_merge_row(float* out_acc, float& lse_acc, const float* out_part, float lse_part,
                                             int dim) {
  const LseMergeWeights w = lse_merge_weights(lse_acc, lse_part);
  for (int c = 0; c < dim; ++c) out_acc[c] = lse_merge_element(w, out_acc[c], out_part[c]);
  lse_acc = w.lse;
}

}  // namespace attnrt::cp
