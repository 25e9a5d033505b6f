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
    // Status OUT_OF_MEMORY for CUDA_ERROR_OUT_OF_MEMORY, DEVICE for any other driver error
    // (Driver::check); CUDA being unavailable at all is DEVICE too (cuda::driver()).
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

void CudaBuffer::upload(const void* host, size_t bytes) {
  if (bytes > bytes_) throw Error(fmt::format("CudaBuffer::upload: {} bytes into a buffer of {}", bytes, bytes_));
  if (bytes == 0) return;
  const cuda::Driver& d = cuda::driver();
  d.make_current(device_);
  d.check(d.cuMemcpyHtoD(reinterpret_cast<cuda::CUdeviceptr>(ptr_), host, bytes), "copying a tensor to the GPU");
}

void CudaBuffer::download(void* host, size_t bytes) const {
  if (bytes > bytes_) throw Error(fmt::format("CudaBuffer::download: {} bytes from a buffer of {}", bytes, bytes_));
  if (bytes == 0) return;
  const cuda::Driver& d = cuda::driver();
  d.make_current(device_);
  d.check(d.cuMemcpyDtoH(host, reinterpret_cast<cuda::CUdeviceptr>(ptr_), bytes), "copying a tensor from the GPU");
}

void cuda_synchronize(DLDevice device) {
  const cuda::Driver& d = cuda::driver();
  d.make_current(device);
  d.check(d.cuCtxSynchronize(), "synchronizing the GPU");
}

namespace {

// The median of `iterations` event-timed calls of fn on `stream` after `warmup` untimed ones;
// `before` (may be empty) runs ahead of every call, outside the timed span.
double median_event_ms(DLDevice device, void* stream, int warmup, int iterations, const std::function<void()>& fn,
                       const std::function<void()>& before) {
  const cuda::Driver& d = cuda::driver();
  d.make_current(device);
  for (int i = 0; i < warmup; ++i) {
    if (before) before();
    fn();
  }
  cuda::CUevent start = nullptr, stop = nullptr;
  d.check(d.cuEventCreate(&start, 0), "cuEventCreate");
  d.check(d.cuEventCreate(&stop, 0), "cuEventCreate");
  std::vector<double> ms;
  try {
    for (int i = 0; i < std::max(iterations, 1); ++i) {
      if (before) before();
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

}  // namespace

double cuda_median_ms(DLDevice device, void* stream, int warmup, int iterations, const std::function<void()>& fn) {
  return median_event_ms(device, stream, warmup, iterations, fn, {});
}

double cuda_median_ms_cold_l2(DLDevice device, void* stream, int warmup, int iterations,
                              const std::function<void()>& fn, CudaBuffer& flush) {
  const cuda::Driver& d = cuda::driver();
  return median_event_ms(device, stream, warmup, iterations, fn, [&] {
    d.check(d.cuMemsetD8Async(reinterpret_cast<cuda::CUdeviceptr>(flush.data()), 0, flush.size(), stream),
            "clearing the L2 flush buffer");
  });
}

}  // namespace attnrt
