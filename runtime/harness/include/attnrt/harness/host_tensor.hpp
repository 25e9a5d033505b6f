// An owning tensor in host memory with a DLPack view: how the runtime, the CLI and the tests
// hold q, k, v and friends on the CPU. Storage is 64-byte aligned and compact (row-major).
#pragma once

#include <attnrt/plugin_abi.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace attnrt {

class HostTensor {
 public:
  HostTensor() = default;
  // Zero-filled tensor of `shape` and `dtype` (float32/16, bfloat16, int32 or float64).
  HostTensor(std::vector<int64_t> shape, DLDataType dtype);
  HostTensor(const HostTensor& other);
  HostTensor& operator=(const HostTensor& other);
  HostTensor(HostTensor&&) noexcept = default;
  HostTensor& operator=(HostTensor&&) noexcept = default;

  DLTensor* dl() { return &view_; }
  const DLTensor* dl() const { return &view_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  DLDataType dtype() const { return view_.dtype; }
  int64_t numel() const;
  size_t nbytes() const;
  bool empty() const { return data_ == nullptr; }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <class T>
  T* data_as() {
    return static_cast<T*>(data());
  }
  template <class T>
  const T* data_as() const {
    return static_cast<const T*>(data());
  }

  // Element `flat` (row-major index) read or written as double, in any supported dtype.
  double get(int64_t flat) const;
  void set(int64_t flat, double value);

  // Normal(0, stddev) values, rounded to the tensor's dtype.
  void fill_normal(std::mt19937_64& rng, double stddev = 1.0);
  // The first `period` elements normal, then those bytes repeated: for timing runs, where the
  // values need only be realistic and drawing every element (about 20 ns each) would dominate.
  void fill_normal_repeating(std::mt19937_64& rng, int64_t period);
  void fill(double value);
  // Quiet NaN everywhere (float dtypes): poisons outputs so a kernel that skips a row shows.
  void fill_nan();
  // A copy converted to `dtype` (float dtypes; rounding to nearest even).
  HostTensor to(DLDataType dtype) const;

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  void bind_view();

  std::vector<int64_t> shape_;
  std::unique_ptr<std::byte[], Free> data_;
  DLTensor view_{};
};

DLDataType dl_float32();
DLDataType dl_float64();
DLDataType dl_int32();
// fp32 / fp16 / bf16 as a DLPack dtype.
DLDataType dl_dtype_of(attnrt_dtype dtype);
// "fp32" | "fp16" | "bf16" (also "float32", "float16", "bfloat16") -> attnrt_dtype; throws.
attnrt_dtype parse_dtype(const std::string& name);

// Row-major flat index -> element offset through t's strides (DLPack's NULL strides = compact).
int64_t strided_offset(const DLTensor& t, int64_t flat);
// Element `flat` of any CPU DLTensor (float32/16, bfloat16, int32, float64) as double.
double read_element(const DLTensor& t, int64_t flat);
int64_t numel_of(const DLTensor& t);

}  // namespace attnrt
