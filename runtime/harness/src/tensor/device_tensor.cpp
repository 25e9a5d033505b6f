#include <attnrt/harness/device_tensor.hpp>
#include <attnrt/runtime/error.hpp>

namespace attnrt {

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
  buffer_.upload(host.data(), host.nbytes());
}

void DeviceTensor::download(HostTensor& host) const {
  if (host.shape() != shape_ || host.nbytes() > buffer_.size()) throw Error("DeviceTensor::download: shape mismatch");
  buffer_.download(host.data(), host.nbytes());
}

}  // namespace attnrt
