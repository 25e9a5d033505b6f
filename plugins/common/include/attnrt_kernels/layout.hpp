// Row access to attention tensors in the ABI's three layouts (padded, varlen, paged), so kernels
// index by (sequence b, position t, head h) and never by memory layout.
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt_kernels/scalar_types.hpp>

#include <algorithm>
#include <cstdint>

namespace attnrt::kernels {

inline const char* tensor_base(const DLTensor* t) { return static_cast<const char*>(t->data) + t->byte_offset; }

inline int64_t stride_of(const DLTensor* t, int dim) {
  if (t->strides != nullptr) return t->strides[dim];
  int64_t s = 1;
  for (int i = t->ndim - 1; i > dim; --i) s *= t->shape[i];
  return s;
}

// A [seq][pos][head][dim] view of q, k, v, out or their gradients. Strides are in bytes.
class RowTensor {
 public:
  enum class Kind { kPadded, kVarlen, kPaged };

  RowTensor() = default;
  // padded: t is [batch, seqlen, heads, dim]; varlen: [total, heads, dim] with cu offsets;
  // paged: [pages, page_size, heads, dim] with block_table [batch, max_pages].
  RowTensor(const DLTensor* t, Kind kind, const int32_t* cu = nullptr, const DLTensor* block_table = nullptr,
            int32_t page_size = 0)
      : base_(const_cast<char*>(tensor_base(t))), kind_(kind), cu_(cu), page_size_(page_size) {
    const int64_t elem = t->dtype.bits / 8;
    if (kind == Kind::kVarlen) {
      s_seq_ = 0;
      s_pos_ = stride_of(t, 0) * elem;
      s_head_ = stride_of(t, 1) * elem;
    } else {
      s_seq_ = stride_of(t, 0) * elem;
      s_pos_ = stride_of(t, 1) * elem;
      s_head_ = stride_of(t, 2) * elem;
    }
    if (kind == Kind::kPaged) {
      table_ = reinterpret_cast<const int32_t*>(tensor_base(block_table));
      table_stride_ = stride_of(block_table, 0);
    }
  }

  char* row(int64_t b, int64_t t, int64_t h) const {
    switch (kind_) {
      case Kind::kVarlen: return base_ + (cu_[b] + t) * s_pos_ + h * s_head_;
      case Kind::kPaged: {
        const int64_t page = table_[b * table_stride_ + t / page_size_];
        return base_ + page * s_seq_ + (t % page_size_) * s_pos_ + h * s_head_;
      }
      case Kind::kPadded: break;
    }
    return base_ + b * s_seq_ + t * s_pos_ + h * s_head_;
  }

 private:
  char* base_ = nullptr;
  Kind kind_ = Kind::kPadded;
  const int32_t* cu_ = nullptr;
  const int32_t* table_ = nullptr;
  int64_t table_stride_ = 0;
  int32_t page_size_ = 0;
  int64_t s_seq_ = 0, s_pos_ = 0, s_head_ = 0;
};

// LSE: [batch, heads_q, seqlen_q] padded, [heads_q, total_q] varlen; float32.
class LseTensor {
 public:
  LseTensor() = default;
  LseTensor(const DLTensor* t, bool varlen, const int32_t* cu_q)
      : base_(reinterpret_cast<float*>(const_cast<char*>(tensor_base(t)))), varlen_(varlen), cu_(cu_q) {
    if (varlen) {
      s_b_ = 0;
      s_h_ = stride_of(t, 0);
      s_i_ = stride_of(t, 1);
    } else {
      s_b_ = stride_of(t, 0);
      s_h_ = stride_of(t, 1);
      s_i_ = stride_of(t, 2);
    }
  }
  float& at(int64_t b, int64_t h, int64_t i) const {
    return varlen_ ? base_[h * s_h_ + (cu_[b] + i) * s_i_] : base_[b * s_b_ + h * s_h_ + i * s_i_];
  }
  explicit operator bool() const { return base_ != nullptr; }

 private:
  float* base_ = nullptr;
  bool varlen_ = false;
  const int32_t* cu_ = nullptr;
  int64_t s_b_ = 0, s_h_ = 0, s_i_ = 0;
};

inline const int32_t* int32_data(const DLTensor* t) {
  return t ? reinterpret_cast<const int32_t*>(tensor_base(t)) : nullptr;
}

inline const float* float_data(const DLTensor* t) {
  return t ? reinterpret_cast<const float*>(tensor_base(t)) : nullptr;
}

// Per-sequence lengths for any of the layouts.
struct SeqLengths {
  const int32_t* cu_q = nullptr;
  const int32_t* cu_k = nullptr;
  const int32_t* seqused_k = nullptr;
  int32_t seqlen_q = 0, seqlen_k = 0;

  int64_t q_len(int64_t b) const { return cu_q ? cu_q[b + 1] - cu_q[b] : seqlen_q; }
  int64_t k_len(int64_t b) const {
    if (seqused_k) return seqused_k[b];
    return cu_k ? cu_k[b + 1] - cu_k[b] : seqlen_k;
  }
};

// ALiBi slope of (b, h): [heads_q] or [batch, heads_q]; 0 without ALiBi.
inline float alibi_slope(const DLTensor* slopes, int64_t b, int64_t h) {
  if (slopes == nullptr) return 0.0f;
  const float* s = float_data(slopes);
  return slopes->ndim == 2 ? s[b * stride_of(slopes, 0) + h] : s[h];
}

// Keys visible to query i: [lo, hi). Bottom-right alignment (FlashAttention-2): the diagonal of
// query i is key i + k_len - q_len. Empty when lo >= hi.
struct KeyRange {
  int64_t lo, hi;
};

inline KeyRange visible_keys(int64_t i, int64_t q_len, int64_t k_len, int32_t window_left, int32_t window_right) {
  const int64_t diag = i + k_len - q_len;
  int64_t lo = window_left >= 0 ? diag - window_left : 0;
  int64_t hi = window_right >= 0 ? diag + window_right + 1 : k_len;
  return {std::max<int64_t>(lo, 0), std::min<int64_t>(hi, k_len)};
}

}  // namespace attnrt::kernels
