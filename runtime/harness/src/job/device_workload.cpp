#include <attnrt/harness/device_workload.hpp>
#include <attnrt/runtime/error.hpp>

namespace attnrt {

DeviceWorkload::DeviceWorkload(Workload& w, DLDevice device) : w_(w), device_(device) {
  if (!on_cuda()) return;
  for (HostTensor* t : w.tensors()) {
    if (!t->empty()) mirrors_.emplace_back(t, DeviceTensor(*t, device));
  }
}

DLTensor* DeviceWorkload::view(HostTensor& t) {
  if (t.empty()) return nullptr;
  if (!on_cuda()) return t.dl();
  for (auto& [host, dev] : mirrors_) {
    if (host == &t) return dev.dl();
  }
  throw Error("DeviceWorkload: tensor has no device mirror");
}

void DeviceWorkload::poison(HostTensor& t) {
  if (t.empty()) return;
  t.fill_nan();
  if (!on_cuda()) return;
  for (auto& [host, dev] : mirrors_) {
    if (host == &t) dev.upload(t);
  }
}

void DeviceWorkload::download(HostTensor& t) {
  if (t.empty() || !on_cuda()) return;
  for (auto& [host, dev] : mirrors_) {
    if (host == &t) dev.download(t);
  }
}

// The optional inputs forward and backward share, pointed at their device mirrors.
template <class Args>
void DeviceWorkload::remap_optional_inputs(Args& a) {
  a.sinks = view(w_.sinks);
  a.alibi_slopes = view(w_.alibi_slopes);
  a.cu_seqlens_q = view(w_.cu_seqlens_q);
  a.cu_seqlens_k = view(w_.cu_seqlens_k);
  a.seqused_k = view(w_.seqused_k);
  a.block_table = view(w_.block_table);
}

attnrt_forward_args DeviceWorkload::forward_args() {
  attnrt_forward_args a = w_.forward_args();
  a.q = view(w_.q);
  a.k = view(w_.k);
  a.v = view(w_.v);
  a.out = view(w_.out);
  a.lse = a.lse ? view(w_.lse) : nullptr;
  remap_optional_inputs(a);
  return a;
}

attnrt_backward_args DeviceWorkload::backward_args() {
  attnrt_backward_args a = w_.backward_args();
  a.dout = view(w_.dout);
  a.q = view(w_.q);
  a.k = view(w_.k);
  a.v = view(w_.v);
  a.out = view(w_.out);
  a.lse = view(w_.lse);
  a.dq = view(w_.dq);
  a.dk = view(w_.dk);
  a.dv = view(w_.dv);
  a.dsinks = a.dsinks ? view(w_.dsinks) : nullptr;
  remap_optional_inputs(a);
  return a;
}

void DeviceWorkload::poison_forward_outputs() {
  poison(w_.out);
  if (w_.desc.return_lse) poison(w_.lse);
}

void DeviceWorkload::poison_backward_outputs() {
  poison(w_.dq);
  poison(w_.dk);
  poison(w_.dv);
  if (w_.desc.has_sinks) poison(w_.dsinks);
}

void DeviceWorkload::download_forward_outputs() {
  if (on_cuda()) cuda_synchronize(device_);
  download(w_.out);
  if (w_.desc.return_lse) download(w_.lse);
}

void DeviceWorkload::download_backward_outputs() {
  if (on_cuda()) cuda_synchronize(device_);
  download(w_.dq);
  download(w_.dk);
  download(w_.dv);
  if (w_.desc.has_sinks) download(w_.dsinks);
}

}  // namespace attnrt
