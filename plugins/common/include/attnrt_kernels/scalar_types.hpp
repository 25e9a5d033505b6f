// Conversions between the ABI's storage dtypes (fp32, fp16, bf16) and float, written so loops
// over them vectorize. bf16 rounding is round-to-nearest-even, as PyTorch and CUDA do.
#pragma once

#include <attnrt/plugin_abi.h>

#include <cstdint>
#include <cstring>

namespace attnrt::kernels {

inline float bf16_to_float(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float fp16_to_float(uint16_t h) {
  _Float16 x;
  std::memcpy(&x, &h, sizeof x);
  return static_cast<float>(x);
}

inline uint16_t float_to_fp16(float f) {
  _Float16 x = static_cast<_Float16>(f);
  uint16_t h;
  std::memcpy(&h, &x, sizeof h);
  return h;
}

inline size_t dtype_bytes(attnrt_dtype dtype) { return dtype == ATTNRT_DTYPE_FP32 ? 4 : 2; }

// dst[0..n) = float(src[0..n)) for a row stored in `dtype`.
inline void load_row(const void* src, attnrt_dtype dtype, float* __restrict dst, int64_t n) {
  switch (dtype) {
    case ATTNRT_DTYPE_FP32: std::memcpy(dst, src, n * sizeof(float)); return;
    case ATTNRT_DTYPE_FP16: {
      const auto* s = static_cast<const _Float16*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
    case ATTNRT_DTYPE_BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(s[i]);
      return;
    }
  }
}

// Like load_row, multiplying by `scale` on the way.
inline void load_row_scaled(const void* src, attnrt_dtype dtype, float scale, float* __restrict dst, int64_t n) {
  load_row(src, dtype, dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] *= scale;
}

// dst[0..n) (stored in `dtype`) = src[0..n) * scale, rounded to nearest.
inline void store_row(const float* __restrict src, float scale, attnrt_dtype dtype, void* dst, int64_t n) {
  switch (dtype) {
    case ATTNRT_DTYPE_FP32: {
      auto* d = static_cast<float*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = src[i] * scale;
      return;
    }
    case ATTNRT_DTYPE_FP16: {
      auto* d = static_cast<_Float16*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<_Float16>(src[i] * scale);
      return;
    }
    case ATTNRT_DTYPE_BF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_bf16(src[i] * scale);
      return;
    }
  }
}

}  // namespace attnrt::kernels
