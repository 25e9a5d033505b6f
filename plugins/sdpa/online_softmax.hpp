// One step of FlashAttention-2's online softmax (Dao 2023, Algorithm 1, lines 8-10) over a
// [rows, width] tile of scores, built twice: for AVX2 (8 lanes) and for AVX-512 (16 lanes), the
// widest the CPU has picked at run time. It is most of the forward's work besides the products:
// the AVX2 build alone left the bf16 forward at 0.6x of PyTorch's per core on the GPU machine's
// Xeon (AMX products, AVX-512 softmax), docs/perf.md.
#pragma once

#include <cstdint>

namespace attnrt::plugins::sdpa {

struct OnlineSoftmaxTile {
  float* s;          // [rows, ld_s] scores; on return p = exp(scale * s - m) there when p_bf16 is null
  int64_t ld_s;      // a multiple of 16
  int64_t rows;      //
  int64_t width;     // columns to process, a multiple of 16 and <= ld_s
  float scale;       // > 0, folded into the exponent (1 when s is already scaled)
  float* m;          // [rows] running max of scale * s, -inf before the first tile
  float* l;          // [rows] running sum of p
  float* o;          // [rows, ld_o] unnormalized output, rescaled by exp(m_old - m_new)
  int64_t ld_o;      //
  int64_t o_width;   // columns of o to rescale, a multiple of 16
  uint16_t* p_bf16;  // optional [rows, ld_p]: p rounded to bf16 (nearest even), zero past width
  int64_t ld_p;
  int64_t p_width;  // columns of p_bf16 to write (zeros from width on)
};

using OnlineSoftmaxFn = void (*)(const OnlineSoftmaxTile&);

// The build for this CPU: AVX-512 (F, BW, DQ, VL) with AVX512-BF16, AVX-512 without it, AVX2.
OnlineSoftmaxFn online_softmax();
// Each build, for tests that compare them.
void online_softmax_avx2(const OnlineSoftmaxTile& t);
void online_softmax_avx512(const OnlineSoftmaxTile& t);
void online_softmax_avx512bf16(const OnlineSoftmaxTile& t);
bool cpu_has_avx512();

// Backward's probabilities and score gradients (FlashAttention-2, Algorithm 2, lines 13 and
// 16) for a [rows, width] tile without softcap: p = exp(s - lse_r) in place of the scores s,
// ds = p (dp - D_r) in place of dp; rows with lse_r = -inf get zeros. width: a multiple of 16.
using ProbabilitiesAndDsFn = void (*)(float* p, float* dp, const float* lse, const float* D, int64_t rows, int64_t ld,
                                      int64_t width);
ProbabilitiesAndDsFn probabilities_and_ds();
void probabilities_and_ds_avx2(float* p, float* dp, const float* lse, const float* D, int64_t rows, int64_t ld,
                               int64_t width);
void probabilities_and_ds_avx512(float* p, float* dp, const float* lse, const float* D, int64_t rows, int64_t ld,
                                 int64_t width);
void probabilities_and_ds_avx512bf16(float* p, float* dp, const float* lse, const float* D, int64_t rows, int64_t ld,
                                     int64_t width);

// x[0..n) as the sum of two bf16 parts, hi = bf16(x) and lo = bf16(x - hi) (round to nearest
// even; x finite): 16 of fp32's 24 significand bits, for products that need more than bf16.
using SplitToBf16Fn = void (*)(const float* x, uint16_t* hi, uint16_t* lo, int64_t n);
SplitToBf16Fn split_to_bf16();
void split_to_bf16_avx2(const float* x, uint16_t* hi, uint16_t* lo, int64_t n);
void split_to_bf16_avx512(const float* x, uint16_t* hi, uint16_t* lo, int64_t n);
void split_to_bf16_avx512bf16(const float* x, uint16_t* hi, uint16_t* lo, int64_t n);
bool cpu_has_avx512bf16();

}  // namespace attnrt::plugins::sdpa
