// How both BlockOps (host_block_ops.cpp, cuda_block_ops.cpp) see a tensor: up to three row
// dimensions (right-aligned: a 2-D tensor is [1, 1, rows]) over a contiguous last dimension of
// `cols` elements, any strides in elements. One decomposition, so the CPU and CUDA paths cannot
// disagree on what a row is.
#pragma once

#include <attnrt/runtime/error.hpp>

#include <dlpack/dlpack.h>
#include <fmt/format.h>

#include <cstdint>

namespace attnrt::cp {

struct RowLayout {
  int64_t shape[3] = {1, 1, 1};
  int64_t stride[3] = {0, 0, 0};  // in elements
  int64_t cols = 1;
};

// `what` names the tensor in errors (ATTNRT_ERROR_INTERNAL: the ring made the view).
inline RowLayout row_layout(const DLTensor& t, const char* what) {
  if (t.ndim < 1 || t.ndim > 4) {
    throw Error(ATTNRT_ERROR_INTERNAL, fmt::format("context parallel: {} has {} dimensions (1 to 4)", what, t.ndim));
  }
  int64_t stride[4]{}, compact = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    stride[d] = t.strides ? t.strides[d] : compact;
    compact *= t.shape[d];
  }
  if (stride[t.ndim - 1] != 1 && t.shape[t.ndim - 1] > 1) {
    throw Error(ATTNRT_ERROR_INTERNAL, fmt::format("context parallel: {}'s last dimension is not contiguous", what));
  }
  RowLayout r;
  r.cols = t.shape[t.ndim - 1];
  const int lead = t.ndim - 1;  // 0 to 3 row dimensions, right-aligned into shape[0..3)
  for (int d = 0; d < lead; ++d) {
    r.shape[3 - lead + d] = t.shape[d];
    r.stride[3 - lead + d] = stride[d];
  }
  return r;
}

inline void same_shape(const DLTensor& a, const DLTensor& b, const char* what) {
  bool same = a.ndim == b.ndim;
  for (int d = 0; same && d < a.ndim; ++d) same = a.shape[d] == b.shape[d];
  if (!same) throw Error(ATTNRT_ERROR_INTERNAL, fmt::format("context parallel: {}: shapes differ", what));
}

}  // namespace attnrt::cp
