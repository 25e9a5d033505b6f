#include "abi_gate.hpp"

#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/yaml_input.hpp>
#include <attnrt/validate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "../log/log.hpp"

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
  // What a plugin logs joins the library's messages (log.hpp), under the plugin's name. The
  // library outlives the instance, so its address is a valid user_data for the instance's life.
  host.log = [](void* user_data, attnrt_log_level level, const char* text) {
    const int l = static_cast<int>(level);
    if (l < ATTNRT_LOG_DEBUG || l > ATTNRT_LOG_ERROR || !text) return;
    log::at(static_cast<LogLevel>(l), "{}: {}", static_cast<const PluginLibrary*>(user_data)->api().name,
            shorten_for_message(text));
  };
  host.log_user_data = library_.get();
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

size_t Backend::workspace_size(const attnrt_attention_desc& desc, bool backward, int num_threads) {
  MessageBuffer err;
  size_t bytes = 0;
  const attnrt_status status =
      library_->api().workspace_size(instance_, &desc, backward ? 1 : 0, num_threads, &bytes, err.get());
  if (status != ATTNRT_OK) fail("workspace_size", status, err.text());
  // Rounded up to whole 256-byte blocks below; a size that would wrap is no allocation at all.
  if (bytes > SIZE_MAX - 255) {
    throw Error(ATTNRT_ERROR_OUT_OF_MEMORY,
                fmt::format("{}: workspace of {} bytes cannot be allocated", name(), bytes));
  }
  workspace_used_.store(bytes, std::memory_order_relaxed);
  return bytes;
}

// A CPU call's workspace: a free block of the backend's pool (the largest, replaced when too
// small) or a new one, given back when the call ends. Calls that overlap hold different blocks.
class Backend::HostWorkspace {
 public:
  HostWorkspace(Backend& backend, size_t bytes) : backend_(backend) {
    if (bytes == 0) return;
    {
      std::lock_guard<std::mutex> lock(backend_.host_mutex_);
      auto& pool = backend_.free_host_blocks_;
      if (!pool.empty()) {
        auto largest = std::max_element(pool.begin(), pool.end(),
                                        [](const HostBlock& a, const HostBlock& b) { return a.capacity < b.capacity; });
        block_ = std::move(*largest);
        pool.erase(largest);
      }
    }
    if (block_.capacity < bytes) {
      const size_t rounded = (bytes + 255) / 256 * 256;
      block_ = HostBlock{};  // the old block is freed first; a failed allocation leaves none
      block_.data.reset(std::aligned_alloc(256, rounded));
      if (!block_.data) {
        throw Error(ATTNRT_ERROR_OUT_OF_MEMORY,
                    fmt::format("{}: cannot allocate {} bytes of workspace", backend_.name(), rounded));
      }
      block_.capacity = rounded;
    }
  }
  ~HostWorkspace() {
    if (!block_.data) return;
    try {
      std::lock_guard<std::mutex> lock(backend_.host_mutex_);
      backend_.free_host_blocks_.push_back(std::move(block_));
    } catch (...) {
      // No room in the pool: the block is freed instead of kept.
    }
  }
  HostWorkspace(const HostWorkspace&) = delete;
  HostWorkspace& operator=(const HostWorkspace&) = delete;
  void* data() const { return block_.data.get(); }

 private:
  Backend& backend_;
  HostBlock block_;
};

void* Backend::cuda_workspace(const attnrt_attention_desc& desc, void* stream, size_t bytes) {
  if (bytes == 0) return nullptr;
  const bool per_thread = stream == nullptr || stream == reinterpret_cast<void*>(0x2);  // cudaStreamPerThread
  CudaBuffer& buffer = cuda_workspaces_[StreamKey{desc.device.device_id, stream,
                                                  per_thread ? std::this_thread::get_id() : std::thread::id()}];
  if (bytes > buffer.size()) {
    // Freed before the new allocation: the old one may be most of the device's memory.
    buffer = CudaBuffer();
    try {
      buffer = CudaBuffer(desc.device, (bytes + 255) / 256 * 256);
    } catch (const Error& e) {
      throw Error(e.status(), fmt::format("{}: workspace of {} bytes: {}", name(), bytes, e.what()));
    }
  }
  return buffer.data();
}

template <class Invoke>
void Backend::call(const char* what, const attnrt_attention_desc& desc, bool backward, int num_threads, void* stream,
                   Invoke&& invoke) {
  attnrt_exec exec{sizeof(attnrt_exec), stream, nullptr, 0, num_threads};
  exec.workspace_size = workspace_size(desc, backward, num_threads);
  MessageBuffer err;  // the call's own: concurrent calls never write one message
  attnrt_status status = ATTNRT_OK;
  if (desc.device.device_type == kDLCUDA) {
    std::lock_guard<std::mutex> lock(cuda_mutex_);
    exec.workspace = cuda_workspace(desc, stream, exec.workspace_size);
    status = invoke(exec, err.get());
  } else if (desc.device.device_type == kDLCPU) {
    HostWorkspace workspace(*this, exec.workspace_size);
    exec.workspace = workspace.data();
    status = invoke(exec, err.get());
  } else {
    throw Error(ATTNRT_ERROR_UNSUPPORTED,
                name() + ": workspace on " + sdk::device_name(desc.device) + " is not supported by attnrt");
  }
  if (status != ATTNRT_OK) fail(what, status, err.text());
}

void Backend::check_forward(const attnrt_attention_desc& desc, const attnrt_forward_args& args) const {
  try {
    sdk::check_forward(desc, args);
  } catch (const sdk::Error& e) {
    throw Error(e.status(), name() + ": forward: " + e.what());
  }
  if (std::string why = abi_gate_reason(desc, library_->api().abi_minor); !why.empty()) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED, name() + ": forward: " + why);
  }
}

void Backend::check_backward(const attnrt_attention_desc& desc, const attnrt_backward_args& args) const {
  if (!has_backward()) throw Error(ATTNRT_ERROR_UNSUPPORTED, name() + ": the plugin implements no backward");
  try {
    sdk::check_backward(desc, args);
  } catch (const sdk::Error& e) {
    throw Error(e.status(), name() + ": backward: " + e.what());
  }
  if (std::string why = abi_gate_reason(desc, library_->api().abi_minor); !why.empty()) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED, name() + ": backward: " + why);
  }
}

void Backend::forward(const attnrt_attention_desc& desc, const attnrt_forward_args& args, int num_threads,
                      void* stream) {
  check_forward(desc, args);
  call("forward", desc, false, num_threads, stream, [&](const attnrt_exec& exec, attnrt_message* error) {
    return library_->api().forward(instance_, &desc, &args, &exec, error);
  });
}

void Backend::backward(const attnrt_attention_desc& desc, const attnrt_backward_args& args, int num_threads,
                       void* stream) {
  check_backward(desc, args);
  call("backward", desc, true, num_threads, stream, [&](const attnrt_exec& exec, attnrt_message* error) {
    return library_->api().backward(instance_, &desc, &args, &exec, error);
  });
}

size_t Backend::required_workspace(const attnrt_attention_desc& desc, bool backward, int num_threads) {
  if (backward && !has_backward()) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED, name() + ": the plugin implements no backward");
  }
  return workspace_size(desc, backward, num_threads);
}

attnrt_exec Backend::caller_exec(const char* what, const attnrt_attention_desc& desc, bool backward,
                                 const attnrt_exec& exec) {
  if (exec.struct_size < ATTNRT_EXEC_SIZE_V1_0) {
    throw Error(ATTNRT_ERROR_INVALID_ARGUMENT, fmt::format("{}: {}: exec.struct_size {} < {} (attnrt_exec of ABI 1.0)",
                                                           name(), what, exec.struct_size, ATTNRT_EXEC_SIZE_V1_0));
  }
  const size_t needed = workspace_size(desc, backward, exec.num_threads);
  if (exec.workspace_size < needed || (needed > 0 && exec.workspace == nullptr)) {
    throw Error(ATTNRT_ERROR_INVALID_ARGUMENT,
                fmt::format("{}: {}: exec.workspace_size {} bytes{} < the {} bytes this call needs "
                            "(attnrt_backend_workspace_size)",
                            name(), what, exec.workspace_size, exec.workspace ? "" : " (workspace NULL)", needed));
  }
  if (reinterpret_cast<uintptr_t>(exec.workspace) % 256 != 0) {
    throw Error(ATTNRT_ERROR_INVALID_ARGUMENT,
                fmt::format("{}: {}: exec.workspace {} is not aligned to 256 bytes", name(), what, exec.workspace));
  }
  // The plugin sees this host's attnrt_exec, whatever size the caller's was.
  return attnrt_exec{sizeof(attnrt_exec), exec.stream, exec.workspace, exec.workspace_size, exec.num_threads};
}

void Backend::forward(const attnrt_attention_desc& desc, const attnrt_forward_args& args, const attnrt_exec& exec) {
  check_forward(desc, args);
  const attnrt_exec e = caller_exec("forward", desc, false, exec);
  MessageBuffer err;
  const attnrt_status status = library_->api().forward(instance_, &desc, &args, &e, err.get());
  if (status != ATTNRT_OK) fail("forward", status, err.text());
}

void Backend::backward(const attnrt_attention_desc& desc, const attnrt_backward_args& args, const attnrt_exec& exec) {
  check_backward(desc, args);
  const attnrt_exec e = caller_exec("backward", desc, true, exec);
  MessageBuffer err;
  const attnrt_status status = library_->api().backward(instance_, &desc, &args, &e, err.get());
  if (status != ATTNRT_OK) fail("backward", status, err.text());
}

bool Backend::has_append_kv() const {
  const attnrt_plugin_api& api = library_->api();
  return api.abi_minor >= 2 && ATTNRT_HAS_FIELD(&api, attnrt_plugin_api, append_kv) && api.append_kv != nullptr;
}

attnrt_exec Backend::appended_entry_exec(const char* what, uint32_t minor, bool has_field, bool entry_set,
                                         const attnrt_exec& exec) const {
  const attnrt_plugin_api& api = library_->api();
  if (api.abi_minor < minor || !has_field) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED,
                fmt::format("{}: {}: built against ABI {}.{}; {} needs ABI {}.{}", name(), what,
                            ATTNRT_ABI_VERSION_MAJOR, api.abi_minor, what, ATTNRT_ABI_VERSION_MAJOR, minor));
  }
  if (!entry_set)
    throw Error(ATTNRT_ERROR_UNSUPPORTED, fmt::format("{}: {}: the plugin does not implement it", name(), what));
  if (exec.struct_size < ATTNRT_EXEC_SIZE_V1_0) {
    throw Error(ATTNRT_ERROR_INVALID_ARGUMENT, fmt::format("{}: {}: exec.struct_size {} < {} (attnrt_exec of ABI 1.0)",
                                                           name(), what, exec.struct_size, ATTNRT_EXEC_SIZE_V1_0));
  }
  return attnrt_exec{sizeof(attnrt_exec), exec.stream, exec.workspace, exec.workspace_size, exec.num_threads};
}

void Backend::append_kv(const attnrt_attention_desc& desc, const attnrt_append_kv_args& args, const attnrt_exec& exec) {
  const attnrt_plugin_api& api = library_->api();
  const bool has_field = ATTNRT_HAS_FIELD(&api, attnrt_plugin_api, append_kv);
  const attnrt_exec e = appended_entry_exec("append_kv", 2, has_field, has_field && api.append_kv, exec);
  try {
    sdk::check_append_kv(desc, args);
  } catch (const sdk::Error& err) {
    throw Error(err.status(), name() + ": append_kv: " + err.what());
  }
  MessageBuffer err;
  const attnrt_status status = api.append_kv(instance_, &desc, &args, &e, err.get());
  if (status != ATTNRT_OK) fail("append_kv", status, err.text());
}

bool Backend::has_create_block_mask() const {
  const attnrt_plugin_api& api = library_->api();
  return api.abi_minor >= 4 && ATTNRT_HAS_FIELD(&api, attnrt_plugin_api, create_block_mask) &&
         api.create_block_mask != nullptr;
}

void Backend::create_block_mask(const attnrt_attention_desc& desc, const attnrt_block_mask_args& args,
                                const attnrt_exec& exec) {
  const attnrt_plugin_api& api = library_->api();
  const bool has_field = ATTNRT_HAS_FIELD(&api, attnrt_plugin_api, create_block_mask);
  const attnrt_exec e =
      appended_entry_exec("create_block_mask", 4, has_field, has_field && api.create_block_mask, exec);
  try {
    sdk::check_block_mask_args(desc, args);
  } catch (const sdk::Error& err) {
    throw Error(err.status(), name() + ": create_block_mask: " + err.what());
  }
  MessageBuffer err;
  const attnrt_status status = api.create_block_mask(instance_, &desc, &args, &e, err.get());
  if (status != ATTNRT_OK) fail("create_block_mask", status, err.text());
}

}  // namespace attnrt
