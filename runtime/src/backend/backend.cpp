#include "abi_gate.hpp"

#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/validate.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>

namespace attnrt {
namespace {

using sdk::MessageBuffer;

}  // namespace

const char* status_name(attnrt_status status) {
  switch (status) {
    case ATTNRT_OK: return "ok";
    case ATTNRT_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case ATTNRT_ERROR_UNSUPPORTED: return "unsupported";
    case ATTNRT_ERROR_DEVICE: return "device error";
    case ATTNRT_ERROR_OUT_OF_MEMORY: return "out of memory";
    case ATTNRT_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

void Backend::FreeDeleter::operator()(void* p) const { std::free(p); }

Backend::Backend(std::shared_ptr<PluginLibrary> library) : library_(std::move(library)) {
  attnrt_host_info host{};
  host.struct_size = sizeof host;
  host.host_abi_major = ATTNRT_ABI_VERSION_MAJOR;
  host.host_abi_minor = ATTNRT_ABI_VERSION_MINOR;
  MessageBuffer err;
  const attnrt_status status = library_->api().create(&host, &instance_, err.get());
  if (status != ATTNRT_OK) fail("create", status, err.text());
}

Backend::~Backend() {
  if (instance_) library_->api().destroy(instance_);
}

void Backend::fail(const char* what, attnrt_status status, const char* message) const {
  throw Error(status, fmt::format("{}: {} failed ({}): {}", name(), what, status_name(status),
                                  message[0] ? message : "no message"));
}

std::string Backend::unsupported_reason(const attnrt_attention_desc& desc) const {
  if (std::string why = abi_gate_reason(desc, library_->api().abi_minor); !why.empty()) return why;
  const std::string gap = sdk::capability_gap(library_->capabilities(), desc);
  if (!gap.empty()) return gap;
  MessageBuffer reason;
  const attnrt_status status = library_->api().supports(instance_, &desc, reason.get());
  if (status == ATTNRT_OK) return "";
  return !reason.empty() ? reason.text() : status_name(status);
}

void* Backend::workspace(const attnrt_attention_desc& desc, bool backward, int num_threads, size_t* bytes) {
  MessageBuffer err;
  const attnrt_status status =
      library_->api().workspace_size(instance_, &desc, backward ? 1 : 0, num_threads, bytes, err.get());
  if (status != ATTNRT_OK) fail("workspace_size", status, err.text());
  // Rounded up to whole 256-byte blocks below; a size that would wrap is no allocation at all.
  if (*bytes > SIZE_MAX - 255) {
    throw Error(ATTNRT_ERROR_OUT_OF_MEMORY,
                fmt::format("{}: workspace of {} bytes cannot be allocated", name(), *bytes));
  }
  workspace_used_ = *bytes;
  if (desc.device.device_type == kDLCUDA) {
    if (*bytes == 0) return nullptr;
    const DLDevice have = cuda_workspace_.device();
    if (*bytes > cuda_workspace_.size() || have.device_id != desc.device.device_id) {
      // Freed before the new allocation: the old one may be most of the device's memory.
      cuda_workspace_ = CudaBuffer();
      try {
        cuda_workspace_ = CudaBuffer(desc.device, (*bytes + 255) / 256 * 256);
      } catch (const Error& e) {
        throw Error(e.status(), fmt::format("{}: workspace of {} bytes: {}", name(), *bytes, e.what()));
      }
    }
    return cuda_workspace_.data();
  }
  if (desc.device.device_type != kDLCPU) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED,
                name() + ": workspace on " + sdk::device_name(desc.device) + " is not supported by attnrt");
  }
  if (*bytes > workspace_capacity_) {
    const size_t rounded = (*bytes + 255) / 256 * 256;
    workspace_capacity_ = 0;  // a failed allocation leaves no workspace behind
    workspace_.reset(std::aligned_alloc(256, rounded));
    if (!workspace_) {
      throw Error(ATTNRT_ERROR_OUT_OF_MEMORY,
                  fmt::format("{}: cannot allocate {} bytes of workspace", name(), rounded));
    }
    workspace_capacity_ = rounded;
  }
  return *bytes ? workspace_.get() : nullptr;
}

void Backend::forward(const attnrt_attention_desc& desc, const attnrt_forward_args& args, int num_threads,
                      void* stream) {
  try {
    sdk::check_forward(desc, args);
  } catch (const sdk::Error& e) {
    throw Error(e.status(), name() + ": forward: " + e.what());
  }
  if (std::string why = abi_gate_reason(desc, library_->api().abi_minor); !why.empty()) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED, name() + ": forward: " + why);
  }
  std::lock_guard<std::mutex> lock(workspace_mutex_);
  attnrt_exec exec{sizeof(attnrt_exec), stream, nullptr, 0, num_threads};
  exec.workspace = workspace(desc, false, num_threads, &exec.workspace_size);
  MessageBuffer err;
  const attnrt_status status = library_->api().forward(instance_, &desc, &args, &exec, err.get());
  if (status != ATTNRT_OK) fail("forward", status, err.text());
}

void Backend::backward(const attnrt_attention_desc& desc, const attnrt_backward_args& args, int num_threads,
                       void* stream) {
  if (!has_backward()) throw Error(ATTNRT_ERROR_UNSUPPORTED, name() + ": the plugin implements no backward");
  try {
    sdk::check_backward(desc, args);
  } catch (const sdk::Error& e) {
    throw Error(e.status(), name() + ": backward: " + e.what());
  }
  if (std::string why = abi_gate_reason(desc, library_->api().abi_minor); !why.empty()) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED, name() + ": backward: " + why);
  }
  std::lock_guard<std::mutex> lock(workspace_mutex_);
  attnrt_exec exec{sizeof(attnrt_exec), stream, nullptr, 0, num_threads};
  exec.workspace = workspace(desc, true, num_threads, &exec.workspace_size);
  MessageBuffer err;
  const attnrt_status status = library_->api().backward(instance_, &desc, &args, &exec, err.get());
  if (status != ATTNRT_OK) fail("backward", status, err.text());
}

}  // namespace attnrt
