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
bool cpu_has_avx512bf16();

}  // namespace attnrt::plugins::sdpa
