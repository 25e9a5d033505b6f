// Header-only C++ helper: write a plugin as a C++ class, get the C function table.
//
// A plugin class provides (see sdk/README.md for a complete example):
//   static constexpr const char* kName, kVersion, kDescription;
//   static attnrt_capabilities capabilities();
//   explicit Plugin(const attnrt_host_info& host);            // may throw attnrt::sdk::Error
//   std::string supports(const attnrt_attention_desc&) const;  // "" if supported, else reason
//   size_t workspace_size(const attnrt_attention_desc&, bool backward, int num_threads) const;
//   void forward(const attnrt_attention_desc&, const attnrt_forward_args&, const attnrt_exec&);
//   void backward(...)                                          // optional, same shape
// and exports it with ATTNRT_DEFINE_PLUGIN(Class). Exceptions never cross the C boundary: an
// attnrt::sdk::Error keeps its status, std::bad_alloc becomes ATTNRT_ERROR_OUT_OF_MEMORY, any
// other exception ATTNRT_ERROR_INTERNAL, each with its message.
#ifndef ATTNRT_PLUGIN_HPP_
#define ATTNRT_PLUGIN_HPP_

#include <attnrt/plugin_abi.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace attnrt::sdk {

// An error with the status it should cross the ABI as.
class Error : public std::runtime_error {
 public:
  Error(attnrt_status status, const std::string& what) : std::runtime_error(what), status_(status) {}
  attnrt_status status() const noexcept { return status_; }

 private:
  attnrt_status status_;
};

// A caller-owned attnrt_message with its storage: what a host (or a test) passes to a plugin's
// functions and reads back. Starts empty; text() is the NUL-terminated message.
struct MessageBuffer {
  static constexpr size_t kCapacity = 2048;
  char data[kCapacity] = {0};
  attnrt_message message{sizeof(attnrt_message), data, kCapacity};

  MessageBuffer() = default;
  MessageBuffer(const MessageBuffer&) = delete;  // message.data points into this object
  MessageBuffer& operator=(const MessageBuffer&) = delete;
  attnrt_message* get() noexcept { return &message; }
  const char* text() const noexcept { return data; }
  bool empty() const noexcept { return data[0] == '\0'; }
};

inline void write_message(attnrt_message* message, const char* text) noexcept {
  if (message == nullptr || message->data == nullptr || message->capacity == 0) return;
  // Truncation is intended: the caller sized the buffer.
  const size_t n = std::min(std::strlen(text), message->capacity - 1);
  std::memcpy(message->data, text, n);
  message->data[n] = '\0';
}

// Runs fn, turning any exception into a status plus message.
template <class Fn>
attnrt_status guarded(attnrt_message* message, Fn&& fn) noexcept {
  try {
    std::forward<Fn>(fn)();
    return ATTNRT_OK;
  } catch (const Error& e) {
    write_message(message, e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    write_message(message, "out of host memory");
    return ATTNRT_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    write_message(message, e.what());
    return ATTNRT_ERROR_INTERNAL;
  } catch (...) {
    write_message(message, "unknown exception in plugin");
    return ATTNRT_ERROR_INTERNAL;
  }
}

template <class Plugin>
struct PluginAdapter {
  static Plugin* self(attnrt_instance* instance) { return reinterpret_cast<Plugin*>(instance); }

  static attnrt_status create(const attnrt_host_info* host, attnrt_instance** instance,
                              attnrt_message* error) noexcept {
    if (host == nullptr || instance == nullptr) {
      write_message(error, "create: host and instance must not be NULL");
      return ATTNRT_ERROR_INVALID_ARGUMENT;
    }
    *instance = nullptr;
    return guarded(error, [&] { *instance = reinterpret_cast<attnrt_instance*>(new Plugin(*host)); });
  }

  static void destroy(attnrt_instance* instance) noexcept {
    try {
      delete self(instance);
    } catch (...) {
    }
  }

  static attnrt_status supports(attnrt_instance* instance, const attnrt_attention_desc* desc,
                                attnrt_message* reason) noexcept {
    if (instance == nullptr || desc == nullptr) {
      write_message(reason, "supports: instance and desc must not be NULL");
      return ATTNRT_ERROR_INVALID_ARGUMENT;
    }
    std::string why;
    attnrt_status status = guarded(reason, [&] { why = self(instance)->supports(*desc); });
    if (status != ATTNRT_OK) return status;
    if (why.empty()) return ATTNRT_OK;
    write_message(reason, why.c_str());
    return ATTNRT_ERROR_UNSUPPORTED;
  }

  static attnrt_status workspace_size(attnrt_instance* instance, const attnrt_attention_desc* desc,
                                      int32_t is_backward, int32_t num_threads, size_t* bytes,
                                      attnrt_message* error) noexcept {
    if (instance == nullptr || desc == nullptr || bytes == nullptr) {
      write_message(error, "workspace_size: instance, desc and bytes must not be NULL");
      return ATTNRT_ERROR_INVALID_ARGUMENT;
    }
    return guarded(error, [&] {
      *bytes = self(instance)->workspace_size(*desc, is_backward != 0, num_threads);
    });
  }

  static attnrt_status forward(attnrt_instance* instance, const attnrt_attention_desc* desc,
                               const attnrt_forward_args* args, const attnrt_exec* exec,
                               attnrt_message* error) noexcept {
    if (instance == nullptr || desc == nullptr || args == nullptr || exec == nullptr) {
      write_message(error, "forward: instance, desc, args and exec must not be NULL");
      return ATTNRT_ERROR_INVALID_ARGUMENT;
    }
    return guarded(error, [&] { self(instance)->forward(*desc, *args, *exec); });
  }

  static attnrt_status backward(attnrt_instance* instance, const attnrt_attention_desc* desc,
                                const attnrt_backward_args* args, const attnrt_exec* exec,
                                attnrt_message* error) noexcept {
    if (instance == nullptr || desc == nullptr || args == nullptr || exec == nullptr) {
      write_message(error, "backward: instance, desc, args and exec must not be NULL");
      return ATTNRT_ERROR_INVALID_ARGUMENT;
    }
    return guarded(error, [&] { self(instance)->backward(*desc, *args, *exec); });
  }
};

template <class Plugin>
concept HasBackward = requires(Plugin p, const attnrt_attention_desc& d,
                               const attnrt_backward_args& a, const attnrt_exec& e) {
  p.backward(d, a, e);
};

// The static function table for Plugin; built once, on first use.
template <class Plugin>
const attnrt_plugin_api* plugin_api() noexcept {
  static const attnrt_capabilities caps = Plugin::capabilities();
  static const attnrt_plugin_api api = [] {
    attnrt_plugin_api a{};
    a.struct_size = sizeof(attnrt_plugin_api);
    a.abi_major = ATTNRT_ABI_VERSION_MAJOR;
    a.abi_minor = ATTNRT_ABI_VERSION_MINOR;
    a.name = Plugin::kName;
    a.version = Plugin::kVersion;
    a.description = Plugin::kDescription;
    a.capabilities = &caps;
    a.create = &PluginAdapter<Plugin>::create;
    a.destroy = &PluginAdapter<Plugin>::destroy;
    a.supports = &PluginAdapter<Plugin>::supports;
    a.workspace_size = &PluginAdapter<Plugin>::workspace_size;
    a.forward = &PluginAdapter<Plugin>::forward;
    if constexpr (HasBackward<Plugin>) a.backward = &PluginAdapter<Plugin>::backward;
    return a;
  }();
  return &api;
}

}  // namespace attnrt::sdk

// Defines the plugin's one exported symbol. Use once per shared library.
#define ATTNRT_DEFINE_PLUGIN(PluginClass)                                                   \
  extern "C" ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api* attnrt_plugin_entry(            \
      uint32_t /*host_abi_major*/, uint32_t /*host_abi_minor*/) {                          \
    return ::attnrt::sdk::plugin_api<PluginClass>();                                       \
  }

#endif  // ATTNRT_PLUGIN_HPP_
