// Device memory, copies and timing for CUDA calls, through the CUDA driver API (libcuda.so.1)
// opened at run time: libattnrt still has no link-time dependency on CUDA. The host works in
// each device's primary context, the one the CUDA runtime (cudart) inside plugins uses, so a
// pointer allocated here is valid in every plugin.
#pragma once

#include <attnrt/runtime/export.hpp>

#include <dlpack/dlpack.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace attnrt {

// Owning allocation on one CUDA device (cuMemAlloc). Throws attnrt::Error with the driver's
// error text when CUDA is unavailable or the allocation fails.
class ATTNRT_API CudaBuffer {
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

  // Synchronous copies of `bytes` (<= size()) from host memory into the buffer and back.
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;

 private:
  DLDevice device_{kDLCUDA, 0};
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Blocks until all work on `device` has finished; throws with the first asynchronous error.
ATTNRT_API void cuda_synchronize(DLDevice device);

// Median milliseconds of `iterations` calls of fn after `warmup` calls, each timed by CUDA
// events recorded on `stream` (NULL: the legacy default stream).
ATTNRT_API double cuda_median_ms(DLDevice device, void* stream, int warmup, int iterations,
                                 const std::function<void()>& fn);

}  // namespace attnrt
