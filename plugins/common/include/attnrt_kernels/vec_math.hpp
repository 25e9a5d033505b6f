// exp and tanh on 8 floats at a time with GCC/Clang vector extensions (std::exp does not
// vectorize without -ffast-math). exp follows Cephes' expf: range reduction by ln 2 split in
// two constants, a degree-6 polynomial, 2^n assembled in the exponent bits; relative error
// about 2 ulp on [-87.3, 88]. Below -87.3 it returns exactly 0, so masked scores (-inf) give
// p = 0.
#pragma once

#include <cstdint>

namespace attnrt::kernels {

typedef float vec8f __attribute__((vector_size(32), aligned(4), may_alias));
typedef int32_t vec8i __attribute__((vector_size(32), aligned(4), may_alias));

inline vec8f splat8(float x) { return vec8f{x, x, x, x, x, x, x, x}; }

// Cephes' expf core for x in [-87.3, 88]: n = round(x / ln 2), r = x - n ln 2 (two-constant
// split), 2^n * p(r).
inline vec8f exp8_core(vec8f x) {
  const vec8f n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  vec8f r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  vec8f p = splat8(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const vec8f y = p * r * r + r + 1.0f;
  const vec8i bits = (__builtin_convertvector(n, vec8i) + 127) << 23;
  return y * reinterpret_cast<vec8f>(bits);  // same-size vector cast: a bit copy
}

inline vec8f exp8(vec8f x) {
  const vec8i underflow = x < -87.3f;
  x = x > 88.0f ? splat8(88.0f) : x;
  x = x < -87.3f ? splat8(-87.3f) : x;
  return underflow ? splat8(0.0f) : exp8_core(x);
}

// exp for x <= 0 (softmax after the row max is subtracted, where it is almost all the
// non-GEMM work): no clamps; the underflow select replaces lanes below -87.3 with 0, so their
// out-of-range exponent bits never matter.
inline vec8f exp8_nonpositive(vec8f x) {
  const vec8i underflow = x < -87.3f;
  return underflow ? splat8(0.0f) : exp8_core(x);
}

// tanh through exp of a non-positive argument, so it never overflows:
// tanh(|x|) = (1 - e) / (1 + e), e = exp(-2|x|).
inline vec8f tanh8(vec8f x) {
  const vec8f ax = x < 0.0f ? -x : x;
  const vec8f e = exp8(-2.0f * ax);
  const vec8f t = (1.0f - e) / (1.0f + e);
  return x < 0.0f ? -t : t;
}

inline vec8f load8(const float* p) { return *reinterpret_cast<const vec8f*>(p); }
inline void store8(float* p, vec8f v) { *reinterpret_cast<vec8f*>(p) = v; }

}  // namespace attnrt::kernels
