// eager: attention with the score matrix materialized, one (sequence, head) at a time. The
// readable path: each step of the math in attnrt_attention_desc's comment is one loop here.
#pragma once

#include <attnrt_kernels/problem.hpp>
#include <attnrt_kernels/threads.hpp>

#include <cstddef>

namespace attnrt::plugins::eager {

// Floats of workspace one thread needs (forward or backward) for desc.
size_t workspace_floats_per_thread(const attnrt_attention_desc& desc, bool backward);
size_t workspace_floats_shared(const attnrt_attention_desc& desc, bool backward);

void forward(const kernels::ForwardProblem& p, float* workspace, int num_threads);
void backward(const kernels::BackwardProblem& p, float* workspace, int num_threads);

inline float dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Score of query i against key j before masking: scale * q.k, softcapped, ALiBi-biased.
// `qk` is the raw dot product. Returns the capped value too (needed by backward).
struct Score {
  float value;   // after softcap and ALiBi
  float capped;  // after softcap, before ALiBi: softcap * tanh(x / softcap), or x without softcap
};

inline Score score(float qk, float scale, float softcap, float slope, int64_t i, int64_t j, int64_t diag_offset) {
  float x = qk * scale;
  if (softcap > 0.0f) x = softcap * std::tanh(x / softcap);
  const float capped = x;
  if (slope != 0.0f) x -= slope * static_cast<float>(std::llabs(i + diag_offset - j));
  return {x, capped};
}

}  // namespace attnrt::plugins::eager
