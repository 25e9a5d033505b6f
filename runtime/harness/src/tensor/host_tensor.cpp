#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/runtime/error.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace attnrt {
namespace {

constexpr size_t kAlignment = 64;

size_t element_bytes(DLDataType t) { return (static_cast<size_t>(t.bits) * t.lanes + 7) / 8; }

uint16_t to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

double read_raw(const void* p, DLDataType t) {
  if (t.code == kDLFloat && t.bits == 32) return *static_cast<const float*>(p);
  if (t.code == kDLFloat && t.bits == 64) return *static_cast<const double*>(p);
  if (t.code == kDLFloat && t.bits == 16) return static_cast<double>(*static_cast<const _Float16*>(p));
  if (t.code == kDLBfloat && t.bits == 16) {
    return std::bit_cast<float>(static_cast<uint32_t>(*static_cast<const uint16_t*>(p)) << 16);
  }
  if (t.code == kDLInt && t.bits == 32) return *static_cast<const int32_t*>(p);
  if (t.code == kDLInt && t.bits == 64) return static_cast<double>(*static_cast<const int64_t*>(p));
  throw Error("unsupported tensor dtype (code " + std::to_string(t.code) + ", bits " + std::to_string(t.bits) + ")");
}

void write_raw(void* p, DLDataType t, double v) {
  if (t.code == kDLFloat && t.bits == 32)
    *static_cast<float*>(p) = static_cast<float>(v);
  else if (t.code == kDLFloat && t.bits == 64)
    *static_cast<double*>(p) = v;
  else if (t.code == kDLFloat && t.bits == 16)
    *static_cast<_Float16*>(p) = static_cast<_Float16>(v);
  else if (t.code == kDLBfloat && t.bits == 16)
    *static_cast<uint16_t*>(p) = to_bf16(static_cast<float>(v));
  else if (t.code == kDLInt && t.bits == 32)
    *static_cast<int32_t*>(p) = static_cast<int32_t>(v);
  else
    throw Error("unsupported tensor dtype (code " + std::to_string(t.code) + ", bits " + std::to_string(t.bits) + ")");
}

}  // namespace

void HostTensor::Free::operator()(std::byte* p) const { std::free(p); }

HostTensor::HostTensor(std::vector<int64_t> shape, DLDataType dtype) : shape_(std::move(shape)) {
  view_.dtype = dtype;
  for (int64_t d : shape_) {
    if (d < 0) throw Error("tensor extent must be >= 0");
  }
  const size_t bytes = std::max<size_t>(kAlignment, (nbytes() + kAlignment - 1) / kAlignment * kAlignment);
  data_.reset(static_cast<std::byte*>(std::aligned_alloc(kAlignment, bytes)));
  if (!data_) throw std::bad_alloc();
  std::memset(data_.get(), 0, bytes);
  bind_view();
}

HostTensor::HostTensor(const HostTensor& other) {
  if (!other.data_) return;  // an empty tensor (a call's unused input) stays empty, not a 0-d one
  *this = HostTensor(other.shape_, other.dtype());
  std::memcpy(data_.get(), other.data_.get(), nbytes());
}

HostTensor& HostTensor::operator=(const HostTensor& other) {
  if (this != &other) *this = HostTensor(other);
  return *this;
}

void HostTensor::bind_view() {
  view_.data = data_.get();
  view_.device = DLDevice{kDLCPU, 0};
  view_.ndim = static_cast<int32_t>(shape_.size());
  view_.shape = shape_.data();
  view_.strides = nullptr;  // compact row-major
  view_.byte_offset = 0;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

size_t HostTensor::nbytes() const { return static_cast<size_t>(numel()) * element_bytes(view_.dtype); }

double HostTensor::get(int64_t flat) const {
  return read_raw(data_.get() + flat * element_bytes(view_.dtype), view_.dtype);
}

void HostTensor::set(int64_t flat, double value) {
  write_raw(data_.get() + flat * element_bytes(view_.dtype), view_.dtype, value);
}

void HostTensor::fill_normal(std::mt19937_64& rng, double stddev) {
  std::normal_distribution<double> normal(0.0, stddev);
  for (int64_t i = 0; i < numel(); ++i) set(i, normal(rng));
}

void HostTensor::fill_normal_repeating(std::mt19937_64& rng, int64_t period) {
  if (period <= 0 || period >= numel()) return fill_normal(rng);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int64_t i = 0; i < period; ++i) set(i, normal(rng));
  auto* bytes = static_cast<std::byte*>(data());
  const size_t block = nbytes() / size_t(numel()) * size_t(period);
  for (size_t at = block; at < nbytes(); at += block) std::memcpy(bytes + at, bytes, std::min(block, nbytes() - at));
}

void HostTensor::fill(double value) {
  for (int64_t i = 0; i < numel(); ++i) set(i, value);
}

void HostTensor::fill_nan() { fill(std::numeric_limits<double>::quiet_NaN()); }

HostTensor HostTensor::to(DLDataType dtype) const {
  HostTensor out(shape_, dtype);
  for (int64_t i = 0; i < numel(); ++i) out.set(i, get(i));
  return out;
}

DLDataType dl_float32() { return DLDataType{kDLFloat, 32, 1}; }
DLDataType dl_float64() { return DLDataType{kDLFloat, 64, 1}; }
DLDataType dl_int32() { return DLDataType{kDLInt, 32, 1}; }

DLDataType dl_dtype_of(attnrt_dtype dtype) {
  switch (dtype) {
    case ATTNRT_DTYPE_FP16: return DLDataType{kDLFloat, 16, 1};
    case ATTNRT_DTYPE_BF16: return DLDataType{kDLBfloat, 16, 1};
    case ATTNRT_DTYPE_FP32: break;
  }
  return dl_float32();
}

attnrt_dtype parse_dtype(const std::string& name) {
  if (name == "fp32" || name == "float32" || name == "float") return ATTNRT_DTYPE_FP32;
  if (name == "fp16" || name == "float16" || name == "half") return ATTNRT_DTYPE_FP16;
  if (name == "bf16" || name == "bfloat16") return ATTNRT_DTYPE_BF16;
  throw Error("unknown dtype '" + name + "' (expected fp32, fp16 or bf16)");
}

int64_t numel_of(const DLTensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

int64_t strided_offset(const DLTensor& t, int64_t flat) {
  if (t.strides == nullptr) return flat;
  int64_t offset = 0;
  for (int i = t.ndim - 1; i >= 0; --i) {
    offset += (flat % t.shape[i]) * t.strides[i];
    flat /= t.shape[i];
  }
  return offset;
}

double read_element(const DLTensor& t, int64_t flat) {
  const auto* base = static_cast<const std::byte*>(t.data) + t.byte_offset;
  return read_raw(base + strided_offset(t, flat) * static_cast<int64_t>(element_bytes(t.dtype)), t.dtype);
}

}  // namespace attnrt
