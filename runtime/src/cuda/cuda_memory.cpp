#include "cuda_driver.hpp"

#include <attnrt/runtime/cuda_memory.hpp>
#include <attnrt/runtime/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace attnrt {

CudaBuffer::CudaBuffer(DLDevice device, size_t bytes) : device_(device), bytes_(bytes) {
  const cuda::Driver& d = cuda::driver();
  d.make_current(device);
  cuda::CUdeviceptr p = 0;
  const cuda::CUresult r = d.cuMemAlloc(&p, std::max<size_t>(bytes, 1));
  if (r != 0) {
    d.check(r, fmt::format("allocating {} bytes on cuda:{}", bytes, device.device_id).c_str());
  }
  ptr_ = reinterpret_cast<void*>(p);
}

CudaBuffer::~CudaBuffer() {
  if (!ptr_) return;
  const cuda::Driver& d = cuda::driver();
  try {
    d.make_current(device_);
  } catch (const Error&) {
    return;  // the context is gone (process exit); nothing to free
  }
  d.cuMemFree(reinterpret_cast<cuda::CUdeviceptr>(ptr_));
}

CudaBuffer::CudaBuffer(CudaBuffer&& other) noexcept
    : device_(other.device_), ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

CudaBuffer& CudaBuffer::operator=(CudaBuffer&& other) noexcept {
  if (this != &other) {
    CudaBuffer old(std::move(*this));
    device_ = other.device_;
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceTensor::DeviceTensor(const HostTensor& host, DLDevice device)
    : buffer_(device, host.nbytes()), shape_(host.shape()) {
  view_.dtype = host.dtype();
  bind_view();
  upload(host);
}

void DeviceTensor::bind_view() {
  view_.data = buffer_.data();
  view_.device = buffer_.device();
  view_.ndim = static_cast<int32_t>(shape_.size());
  view_.shape = shape_.data();
  view_.strides = nullptr;
  view_.byte_offset = 0;
}

void DeviceTensor::upload(const HostTensor& host) {
  if (host.shape() != shape_ || host.nbytes() > buffer_.size()) throw Error("DeviceTensor::upload: shape mismatch");
  const cuda::Driver& d = cuda::driver();
  d.make_current(buffer_.device());
  if (host.nbytes()) {
    d.check(d.cuMemcpyHtoD(reinterpret_cast<cuda::CUdeviceptr>(buffer_.data()), host.data(), host.nbytes()),
            "copying a tensor to the GPU");
  }
}

void DeviceTensor::download(HostTensor& host) const {
  if (host.shape() != shape_ || host.nbytes() > buffer_.size()) throw Error("DeviceTensor::download: shape mismatch");
  const cuda::Driver& d = cuda::driver();
  d.make_current(buffer_.device());
  if (host.nbytes()) {
    d.check(d.cuMemcpyDtoH(host.data(), reinterpret_cast<cuda::CUdeviceptr>(buffer_.data()), host.nbytes()),
            "copying a tensor from the GPU");
  }
}

void cuda_synchronize(DLDevice device) {
  const cuda::Driver& d = cuda::driver();
  d.make_current(device);
  d.check(d.cuCtxSynchronize(), "synchronizing the GPU");
}

double cuda_median_ms(DLDevice device, void* stream, int warmup, int iterations, const std::function<void()>& fn) {
  const cuda::Driver& d = cuda::driver();
  d.make_current(device);
  for (int i = 0; i < warmup; ++i) fn();
  cuda::CUevent start = nullptr, stop = nullptr;
  d.check(d.cuEventCreate(&start, 0), "cuEventCreate");
  d.check(d.cuEventCreate(&stop, 0), "cuEventCreate");
  std::vector<double> ms;
  try {
    for (int i = 0; i < std::max(iterations, 1); ++i) {
      d.check(d.cuEventRecord(start, stream), "cuEventRecord");
      fn();
      d.check(d.cuEventRecord(stop, stream), "cuEventRecord");
      d.check(d.cuEventSynchronize(stop), "waiting for the timed call");
      float elapsed = 0;
      d.check(d.cuEventElapsedTime(&elapsed, start, stop), "cuEventElapsedTime");
      ms.push_back(elapsed);
    }
  } catch (...) {
    d.cuEventDestroy(start);
    d.cuEventDestroy(stop);
    throw;
  }
  d.cuEventDestroy(start);
  d.cuEventDestroy(stop);
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

}  // namespace attnrt
