// A DLTensor that owns its shape and strides: the views the ring makes of the caller's shards
// and of its own buffers (a range of rows, a compact block), passed to plugins as they are.
#pragma once

#include <dlpack/dlpack.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace attnrt::cp {

class TensorView {
 public:
  TensorView() { bind(); }
  // A view of t (strides NULL: compact), at most 4 dimensions.
  explicit TensorView(const DLTensor& t) : t_(t) {
    int64_t compact = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      shape_[d] = t.shape[d];
      strides_[d] = t.strides ? t.strides[d] : compact;
      compact *= t.shape[d];
    }
    bind();
  }
  // A compact tensor of `shape` at `data`.
  TensorView(void* data, DLDataType dtype, DLDevice device, std::initializer_list<int64_t> shape) {
    t_.data = data;
    t_.dtype = dtype;
    t_.device = device;
    t_.ndim = static_cast<int32_t>(shape.size());
    std::copy(shape.begin(), shape.end(), shape_);
    int64_t compact = 1;
    for (int d = t_.ndim - 1; d >= 0; --d) {
      strides_[d] = compact;
      compact *= shape_[d];
    }
    bind();
  }
  TensorView(const TensorView& other) : t_(other.t_) {
    std::copy(other.shape_, other.shape_ + 4, shape_);
    std::copy(other.strides_, other.strides_ + 4, strides_);
    bind();
  }
  TensorView& operator=(const TensorView& other) {
    t_ = other.t_;
    std::copy(other.shape_, other.shape_ + 4, shape_);
    std::copy(other.strides_, other.strides_ + 4, strides_);
    bind();
    return *this;
  }

  DLTensor* dl() { return &t_; }
  const DLTensor* dl() const { return &t_; }
  DLTensor& operator*() { return t_; }
  const DLTensor& operator*() const { return t_; }

  // Indices [begin, end) of dimension `dim`.
  TensorView slice(int dim, int64_t begin, int64_t end) const {
    TensorView v(*this);
    v.t_.byte_offset += static_cast<uint64_t>(begin * strides_[dim] * ((t_.dtype.bits * t_.dtype.lanes + 7) / 8));
    v.shape_[dim] = end - begin;
    return v;
  }
  // The view without its dimension 0, which must have extent 1: one half of a varlen ring's
  // [halves, rows, heads, dim] buffers as the [rows, heads, dim] a varlen call takes.
  TensorView without_dim0() const {
    TensorView v(*this);
    v.t_.ndim = t_.ndim - 1;
    std::copy(shape_ + 1, shape_ + 4, v.shape_);
    std::copy(strides_ + 1, strides_ + 4, v.strides_);
    v.shape_[3] = 0;
    v.strides_[3] = 0;
    return v;
  }
  // Rows of the sequence dimension: dim 1 of BSHD tensors ([batch, seqlen, heads, dim]), dim 2
  // of LSEs ([batch, heads, seqlen]).
  TensorView seq_rows(int64_t begin, int64_t end) const { return slice(t_.ndim == 3 ? 2 : 1, begin, end); }
  // Row-major without gaps (dimensions of extent 1 may have any stride): what the CUDA plugins
  // require of an LSE, which a range of rows of a [batch, heads, seqlen] LSE is not.
  bool compact() const {
    int64_t expect = 1;
    for (int d = t_.ndim - 1; d >= 0; --d) {
      if (shape_[d] > 1 && strides_[d] != expect) return false;
      expect *= shape_[d];
    }
    return true;
  }

 private:
  void bind() {
    t_.shape = shape_;
    t_.strides = strides_;
  }
  DLTensor t_{};
  int64_t shape_[4]{};
  int64_t strides_[4]{};
};

}  // namespace attnrt::cp
