// BlockOps on the CPU (block_ops.hpp): plain loops over rows of up to 4-dimensional strided
// tensors; the merge is lse_merge.hpp's, the code the CUDA kernel shares (cuda_block_kernels.cu).
#include "block_rows.hpp"

#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/parallel/block_ops.hpp>
#include <attnrt/runtime/parallel/lse_merge.hpp>

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace attnrt::cp {

BlockOps::~BlockOps() = default;

namespace {

enum class Kind { f32, f16, bf16 };

Kind kind_of(const DLTensor& t, const char* what) {
  if (t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1) return Kind::f32;
  if (t.dtype.code == kDLFloat && t.dtype.bits == 16 && t.dtype.lanes == 1) return Kind::f16;
  if (t.dtype.code == kDLBfloat && t.dtype.bits == 16 && t.dtype.lanes == 1) return Kind::bf16;
  throw Error(ATTNRT_ERROR_INTERNAL, fmt::format("context parallel: {} is not float32, float16 or bfloat16", what));
}

size_t bytes_of(Kind k) { return k == Kind::f32 ? 4 : 2; }

float bf16_to_float(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t float_to_bf16(float f) {  // round to nearest even; NaN stays a quiet NaN
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// IEEE binary16 by its bits: _Float16 is not available to every compiler that builds the runtime
// (clang 14 on x86-64, the fuzz build, has none without AVX512-FP16).
float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -v : v;
  }
  const uint32_t u = exponent == 31 ? sign | 0x7f800000u | (mantissa << 13)  // inf, NaN
                                    : sign | ((exponent + 112u) << 23) | (mantissa << 13);
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Round to nearest even, overflow to inf, NaN stays NaN (F. Giesen's float_to_half_fast3_rtne).
uint16_t float_to_fp16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint16_t out;
  if (u >= (127u + 16u) << 23) {  // 2^16 and above (inf, NaN): no finite half
    out = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (u < 113u << 23) {  // below 2^-14: subnormal or zero; let float addition round
    const uint32_t magic_bits = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    float x, magic;
    std::memcpy(&x, &u, sizeof x);
    std::memcpy(&magic, &magic_bits, sizeof magic);
    x += magic;
    uint32_t r;
    std::memcpy(&r, &x, sizeof r);
    out = static_cast<uint16_t>(r - magic_bits);
  } else {
    const uint32_t odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd;
    out = static_cast<uint16_t>(u >> 13);
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

// A tensor seen as rows: [d0, d1, d2] rows of `cols` contiguous elements (fewer dims: leading 1s).
struct Rows {
  char* base = nullptr;
  Kind kind = Kind::f32;
  std::array<int64_t, 3> shape{1, 1, 1}, stride{0, 0, 0};  // stride in elements
  int64_t cols = 1;

  void* row(int64_t i0, int64_t i1, int64_t i2) const {
    return base + (i0 * stride[0] + i1 * stride[1] + i2 * stride[2]) * static_cast<int64_t>(bytes_of(kind));
  }
  void load(int64_t i0, int64_t i1, int64_t i2, float* dst) const {
    const void* p = row(i0, i1, i2);
    switch (kind) {
      case Kind::f32: std::memcpy(dst, p, cols * sizeof(float)); return;
      case Kind::f16:
        for (int64_t c = 0; c < cols; ++c) dst[c] = fp16_to_float(static_cast<const uint16_t*>(p)[c]);
        return;
      case Kind::bf16:
        for (int64_t c = 0; c < cols; ++c) dst[c] = bf16_to_float(static_cast<const uint16_t*>(p)[c]);
        return;
    }
  }
  void store(int64_t i0, int64_t i1, int64_t i2, const float* src) const {
    void* p = row(i0, i1, i2);
    switch (kind) {
      case Kind::f32: std::memcpy(p, src, cols * sizeof(float)); return;
      case Kind::f16:
        for (int64_t c = 0; c < cols; ++c) static_cast<uint16_t*>(p)[c] = float_to_fp16(src[c]);
        return;
      case Kind::bf16:
        for (int64_t c = 0; c < cols; ++c) static_cast<uint16_t*>(p)[c] = float_to_bf16(src[c]);
        return;
    }
  }
};

Rows rows_of(const DLTensor& t, const char* what) {
  if (t.device.device_type != kDLCPU) {
    throw Error(ATTNRT_ERROR_INTERNAL, fmt::format("context parallel: {} is not in host memory", what));
  }
  Rows r;
  r.kind = kind_of(t, what);
  r.base = static_cast<char*>(t.data) + t.byte_offset;
  const RowLayout l = row_layout(t, what);
  for (int d = 0; d < 3; ++d) {
    r.shape[d] = l.shape[d];
    r.stride[d] = l.stride[d];
  }
  r.cols = l.cols;
  return r;
}

template <class Body>
void for_rows(const Rows& r, Body body) {
  for (int64_t i0 = 0; i0 < r.shape[0]; ++i0)
    for (int64_t i1 = 0; i1 < r.shape[1]; ++i1)
      for (int64_t i2 = 0; i2 < r.shape[2]; ++i2) body(i0, i1, i2);
}

class HostBlockOps final : public BlockOps {
 public:
  DLDevice device() const override { return {kDLCPU, 0}; }

  std::shared_ptr<void> allocate(size_t bytes, void*) override {
    const size_t rounded = (bytes + 255) / 256 * 256;
    void* p = std::aligned_alloc(256, rounded ? rounded : 256);
    if (!p) throw Error(ATTNRT_ERROR_OUT_OF_MEMORY, fmt::format("context parallel: cannot allocate {} bytes", bytes));
    return {p, [](void* q) { std::free(q); }};
  }

  void upload(const void* host, void* dst, size_t bytes, void*) override {
    if (bytes) std::memcpy(dst, host, bytes);
  }

  void copy(const DLTensor& src, DLTensor& dst, void*) override {
    same_shape(src, dst, "copy");
    const Rows s = rows_of(src, "copy source"), d = rows_of(dst, "copy destination");
    std::vector<float> row(s.cols);
    for_rows(s, [&](int64_t a, int64_t b, int64_t c) {
      s.load(a, b, c, row.data());
      d.store(a, b, c, row.data());
    });
  }

  void fill(DLTensor& dst, float value, void*) override {
    const Rows d = rows_of(dst, "fill destination");
    const std::vector<float> row(d.cols, value);
    for_rows(d, [&](int64_t a, int64_t b, int64_t c) { d.store(a, b, c, row.data()); });
  }

  void add(DLTensor& acc, const DLTensor& part, void*) override {
    same_shape(acc, part, "add");
    const Rows a = rows_of(acc, "accumulator"), p = rows_of(part, "partial result");
    if (a.kind != Kind::f32) throw Error(ATTNRT_ERROR_INTERNAL, "context parallel: an accumulator must be float32");
    std::vector<float> row(p.cols);
    for_rows(p, [&](int64_t i0, int64_t i1, int64_t i2) {
      p.load(i0, i1, i2, row.data());
      float* dst = static_cast<float*>(a.row(i0, i1, i2));
      for (int64_t c = 0; c < a.cols; ++c) dst[c] += row[c];
    });
  }

  void merge(DLTensor& out_acc, DLTensor& lse_acc, const DLTensor& out_part, const DLTensor& lse_part, void*) override {
    same_shape(out_acc, out_part, "merge (out)");
    same_shape(lse_acc, lse_part, "merge (lse)");
    if (out_acc.ndim != 4 || lse_acc.ndim != 3 || lse_acc.shape[0] != out_acc.shape[0] ||
        lse_acc.shape[1] != out_acc.shape[2] || lse_acc.shape[2] != out_acc.shape[1]) {
      throw Error(ATTNRT_ERROR_INTERNAL, "context parallel: merge: out is not [b, l, h, d] with lse [b, h, l]");
    }
    const Rows oa = rows_of(out_acc, "merged out"), op = rows_of(out_part, "partial out");
    const Rows la = rows_of(lse_acc, "merged lse"), lp = rows_of(lse_part, "partial lse");
    if (oa.kind != Kind::f32 || la.kind != Kind::f32 || lp.kind != Kind::f32) {
      throw Error(ATTNRT_ERROR_INTERNAL, "context parallel: merge accumulators and LSEs must be float32");
    }
    std::vector<float> part(op.cols);
    // out rows are (b, l, h); lse rows are (b, h) with l along the contiguous dimension.
    for_rows(oa, [&](int64_t b, int64_t l, int64_t h) {
      op.load(b, l, h, part.data());
      float& lse = static_cast<float*>(la.row(0, b, h))[l];
      const float lse_p = static_cast<const float*>(lp.row(0, b, h))[l];
      lse_merge_row(static_cast<float*>(oa.row(b, l, h)), lse, part.data(), lse_p, static_cast<int>(oa.cols));
    });
  }
};

}  // namespace

std::unique_ptr<BlockOps> host_block_ops() { return std::make_unique<HostBlockOps>(); }

}  // namespace attnrt::cp
