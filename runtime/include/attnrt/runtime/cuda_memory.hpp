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

// cuda_median_ms with a cold L2 cache: before every call (warm-up and timed) `flush`, a buffer
// larger than the L2 (H100: 50 MiB), is cleared by cuMemsetD8Async on `stream`, and the start
// event is recorded after it, as triton.testing.do_bench times (PyTorch's anchors use it). So no
// call reads what the previous one left in L2, and fn's host-side work (argument checks, the
// launch) runs while the GPU is still clearing: the time is the GPU's, as in a CUDA graph.
ATTNRT_API double cuda_median_ms_cold_l2(DLDevice device, void* stream, int warmup, int iterations,
                                         const std::function<void()>& fn, CudaBuffer& flush);

}  // namespace attnrt
