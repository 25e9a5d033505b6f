// Device memory, copies and timing for CUDA calls, through the CUDA driver API (libcuda.so.1)
// opened at run time: libattnrt still has no link-time dependency on CUDA. The host works in
// each device's primary context, the one the CUDA runtime (cudart) inside plugins uses, so a
// pointer allocated here is valid in every plugin.
#pragma once

#include <attnrt/runtime/host_tensor.hpp>

#include <dlpack/dlpack.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace attnrt {

// Owning allocation on one CUDA device (cuMemAlloc). Throws attnrt::Error with the driver's
// error text when CUDA is unavailable or the allocation fails.
class CudaBuffer {
 public:
  CudaBuffer() = default;
  CudaBuffer(DLDevice device, size_t bytes);
  ~CudaBuffer();
  CudaBuffer(CudaBuffer&& other) noexcept;
  CudaBuffer& operator=(CudaBuffer&& other) noexcept;
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  void* data() const { return ptr_; }
  size_t size() const { return bytes_; }
  DLDevice device() const { return device_; }

 private:
  DLDevice device_{kDLCUDA, 0};
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A compact tensor on a CUDA device with a DLPack view, mirrored from / to a HostTensor.
class DeviceTensor {
 public:
  DeviceTensor() = default;
  // Allocates host's shape and dtype on `device` and copies host's contents there.
  DeviceTensor(const HostTensor& host, DLDevice device);
  DeviceTensor(DeviceTensor&&) noexcept = default;
  DeviceTensor& operator=(DeviceTensor&&) noexcept = default;

  DLTensor* dl() { return &view_; }
  bool empty() const { return buffer_.data() == nullptr; }
  void upload(const HostTensor& host);       // same shape and dtype
  void download(HostTensor& host) const;     // same shape and dtype

 private:
  void bind_view();
  CudaBuffer buffer_;
  std::vector<int64_t> shape_;
  DLTensor view_{};
};

// Blocks until all work on `device` has finished; throws with the first asynchronous error.
void cuda_synchronize(DLDevice device);

// Median milliseconds of `iterations` calls of fn after `warmup` calls, each timed by CUDA
// events recorded on `stream` (NULL: the legacy default stream).
double cuda_median_ms(DLDevice device, void* stream, int warmup, int iterations, const std::function<void()>& fn);

}  // namespace attnrt
