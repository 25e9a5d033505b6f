// A compact tensor on a CUDA device with a DLPack view, mirrored from / to a HostTensor: how
// the harness (run job, bench, GPU tests) puts a workload's tensors on the GPU.
#pragma once

#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/runtime/cuda_memory.hpp>

#include <dlpack/dlpack.h>

#include <vector>

namespace attnrt {

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
  void upload(const HostTensor& host);    // same shape and dtype
  void download(HostTensor& host) const;  // same shape and dtype

 private:
  void bind_view();
  CudaBuffer buffer_;
  std::vector<int64_t> shape_;
  DLTensor view_{};
};

}  // namespace attnrt
