// A Workload's tensors mirrored on the device a call runs on. For a CPU call the host tensors
// are used as they are; for a CUDA call every tensor is copied to the GPU once, outputs are
// poisoned there by uploading NaN, and results come back with download_outputs().
#pragma once

#include <attnrt/harness/device_tensor.hpp>
#include <attnrt/harness/workload.hpp>

#include <utility>
#include <vector>

namespace attnrt {

class DeviceWorkload {
 public:
  // Throws attnrt::Error when `device` is CUDA and CUDA memory cannot be had.
  DeviceWorkload(Workload& w, DLDevice device);

  bool on_cuda() const { return device_.device_type == kDLCUDA; }
  DLDevice device() const { return device_; }
  attnrt_forward_args forward_args();
  attnrt_backward_args backward_args();

  // Fills forward (or backward) outputs with NaN, on the host and on the device.
  void poison_forward_outputs();
  void poison_backward_outputs();
  // Copies forward (or backward) outputs back into the host Workload (no-op on the CPU).
  void download_forward_outputs();
  void download_backward_outputs();

 private:
  DLTensor* view(HostTensor& t);
  template <class Args>
  void remap_optional_inputs(Args& a);
  void poison(HostTensor& t);
  void download(HostTensor& t);

  Workload& w_;
  DLDevice device_;
  std::vector<std::pair<HostTensor*, DeviceTensor>> mirrors_;
};

}  // namespace attnrt
