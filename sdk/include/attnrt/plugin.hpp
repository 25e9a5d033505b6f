// Header-only C++ helper: write a plugin as a C++ class, get the C function table.
//
// A plugin class provides (see sdk/README.md for a complete example):
//   static constexpr const char* kName, kVersion, kDescription;
//   static constexpr attnrt_capabilities kCapabilities = attnrt::sdk::capabilities({...});
//                                     // (or a static capabilities() function returning them)
//   explicit Plugin(const attnrt_host_info& host);            // or default-constructible; may throw
//   std::string supports(const attnrt_attention_desc&) const;  // optional: "" or a reason, beyond
//                                                               // what the capabilities say
//   size_t workspace_size(const attnrt_attention_desc&, bool backward, int num_threads) const;
//   void forward(const attnrt_attention_desc&, const attnrt_forward_args&, const attnrt_exec&);
//   void backward(...)                                          // optional, same shape
//   void append_kv(const attnrt_attention_desc&, const attnrt_append_kv_args&, const attnrt_exec&);
//                                     // optional (ABI 1.2): the KV-cache append; advertise
//                                     // ATTNRT_FEATURE_APPEND_KV with it
//   void create_block_mask(const attnrt_attention_desc&, const attnrt_block_mask_args&, const attnrt_exec&);
//                                     // optional (ABI 1.4): a flex block mask from mask_mod;
//                                     // advertise ATTNRT_FEATURE_CREATE_BLOCK_MASK with it
//   static constexpr uint32_t kExtensions[] = {...};            // optional: extension types it
//                                                               // implements (ABI 1.1)
// and exports it with ATTNRT_DEFINE_PLUGIN(Class). Exceptions never cross the C boundary: an
// attnrt::sdk::Error keeps its status, std::bad_alloc becomes ATTNRT_ERROR_OUT_OF_MEMORY, any
// other exception ATTNRT_ERROR_INTERNAL, each with its message.
//
// What the adapter does before the class sees a call, so that no plugin repeats it (and none
// can forget it): supports and workspace_size check the descriptor (validate.hpp's check_desc);
// supports refuses what the capabilities do not cover (capability_gap: dtype, head_dim, device,
// every feature the descriptor uses) before asking the class; forward and backward validate
// every tensor (check_forward / check_backward, INVALID_ARGUMENT naming the tensor) and refuse,
// with the same reason, whatever supports refuses (UNSUPPORTED): a plugin never computes
// something other than what the descriptor says.
//
// Extensions (ABI 1.1): the adapter refuses a malformed extension chain (INVALID_ARGUMENT) and
// every required extension block whose type is not in kExtensions (UNSUPPORTED, naming it), in
// supports, forward and backward alike: a class that declares nothing never silently ignores a
// required extension. Optional blocks reach the class, which may read them (find_extension) or
// ignore them.
#ifndef ATTNRT_PLUGIN_HPP_
#define ATTNRT_PLUGIN_HPP_

#include <attnrt/plugin_abi.h>
#include <attnrt/extensions.hpp>
#include <attnrt/status.hpp>
#include <attnrt/validate.hpp>

#include <concepts>
#include <cstdint>
#include <string>
#include <type_traits>

namespace attnrt::sdk {

// What a plugin declares it can do, by name (C++20 designated initializers), for capabilities():
//   static constexpr attnrt_capabilities kCapabilities = attnrt::sdk::capabilities({
//       .devices = ATTNRT_DEVICE_BIT_CPU, .dtypes = ATTNRT_DTYPE_BIT_FP32,
//       .features = ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_LSE, .max_head_dim = 256});
struct CapabilitySpec {
  uint32_t devices = 0;       // attnrt_device_bits
  uint32_t dtypes = 0;        // attnrt_dtype_bits
  uint64_t features = 0;      // attnrt_feature_bits
  int32_t min_head_dim = 1;   // smallest head_dim / head_dim_v accepted
  int32_t max_head_dim = 0;   // largest
  int32_t min_cuda_arch = 0;  // CUDA: lowest compute capability, major*10+minor; 0: any
  int32_t max_cuda_arch = 0;  // CUDA: highest; 0: no upper bound
};

constexpr attnrt_capabilities capabilities(const CapabilitySpec& s) noexcept {
  return attnrt_capabilities{sizeof(attnrt_capabilities),
                             s.devices,
                             s.dtypes,
                             s.features,
                             s.min_head_dim,
                             s.max_head_dim,
                             s.min_cuda_arch,
                             s.max_cuda_arch};
}

template <class Plugin>
concept HasCapabilityConstant = requires {
  attnrt_capabilities(Plugin::kCapabilities);
};

template <class Plugin>
concept HasSupports = requires(const Plugin& p, const attnrt_attention_desc& d) {
  { p.supports(d) } -> std::convertible_to<std::string>;
};

template <class Plugin>
concept HasBackward = requires(Plugin p, const attnrt_attention_desc& d, const attnrt_backward_args& a,
                               const attnrt_exec& e) {
  p.backward(d, a, e);
};

template <class Plugin>
concept HasAppendKv = requires(Plugin p, const attnrt_attention_desc& d, const attnrt_append_kv_args& a,
                               const attnrt_exec& e) {
  p.append_kv(d, a, e);
};

template <class Plugin>
concept HasCreateBlockMask = requires(Plugin p, const attnrt_attention_desc& d, const attnrt_block_mask_args& a,
                                      const attnrt_exec& e) {
  p.create_block_mask(d, a, e);
};

// Plugin's capabilities, from kCapabilities or capabilities(); built once.
template <class Plugin>
const attnrt_capabilities& plugin_capabilities() noexcept {
  if constexpr (HasCapabilityConstant<Plugin>) {
    static constexpr attnrt_capabilities caps = Plugin::kCapabilities;
    return caps;
  } else {
    static const attnrt_capabilities caps = Plugin::capabilities();
    return caps;
  }
}

template <class Plugin>
struct PluginAdapter {
  static Plugin* self(attnrt_instance* instance) { return reinterpret_cast<Plugin*>(instance); }

  // "" when the instance computes desc exactly as described, else the reason: a malformed chain
  // throws (INVALID_ARGUMENT); then unimplemented required extensions, the capabilities, and
  // the class's own supports(), in that order.
  static std::string unsupported_reason(attnrt_instance* instance, const attnrt_attention_desc& desc) {
    check_desc(desc);
    if (std::string why = unimplemented_extension_reason(desc, implemented_extensions<Plugin>()); !why.empty()) {
      return why;
    }
    if (std::string gap = capability_gap(plugin_capabilities<Plugin>(), desc); !gap.empty()) return gap;
    if constexpr (HasSupports<Plugin>) return self(instance)->supports(desc);
    return "";
  }

  static attnrt_status create(const attnrt_host_info* host, attnrt_instance** instance,
                              attnrt_message* error) noexcept {
    if (host == nullptr || instance == nullptr) {
      write_message(error, "create: host and instance must not be NULL");
      return ATTNRT_ERROR_INVALID_ARGUMENT;
    }
    *instance = nullptr;
    return guarded(error, [&] {
      if constexpr (std::is_constructible_v<Plugin, const attnrt_host_info&>) {
        *instance = reinterpret_cast<attnrt_instance*>(new Plugin(*host));
      } else {
        *instance = reinterpret_cast<attnrt_instance*>(new Plugin());
      }
    });
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
    const attnrt_status status = guarded(reason, [&] { why = unsupported_reason(instance, *desc); });
    if (status != ATTNRT_OK) return status;
    if (why.empty()) return ATTNRT_OK;
    write_message(reason, why.c_str());
    return ATTNRT_ERROR_UNSUPPORTED;
  }

  static attnrt_status workspace_size(attnrt_instance* instance, const attnrt_attention_desc* desc, int32_t is_backward,
                                      int32_t num_threads, size_t* bytes, attnrt_message* error) noexcept {
    if (instance == nullptr || desc == nullptr || bytes == nullptr) {
      write_message(error, "workspace_size: instance, desc and bytes must not be NULL");
      return ATTNRT_ERROR_INVALID_ARGUMENT;
    }
    return guarded(error, [&] {
      check_desc(*desc);
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
    return guarded(error, [&] {
      check_forward(*desc, *args);
      require_supported(unsupported_reason(instance, *desc));
      self(instance)->forward(*desc, *args, *exec);
    });
  }

  static attnrt_status backward(attnrt_instance* instance, const attnrt_attention_desc* desc,
                                const attnrt_backward_args* args, const attnrt_exec* exec,
                                attnrt_message* error) noexcept {
    if (instance == nullptr || desc == nullptr || args == nullptr || exec == nullptr) {
      write_message(error, "backward: instance, desc, args and exec must not be NULL");
      return ATTNRT_ERROR_INVALID_ARGUMENT;
    }
    return guarded(error, [&] {
      check_backward(*desc, *args);
      require_supported(unsupported_reason(instance, *desc));
      self(instance)->backward(*desc, *args, *exec);
    });
  }

  // ABI 1.2: validates the append (check_append_kv) and refuses what the capabilities do not
  // cover (device, dtype, head_dim) before the class writes anything.
  static attnrt_status append_kv(attnrt_instance* instance, const attnrt_attention_desc* desc,
                                 const attnrt_append_kv_args* args, const attnrt_exec* exec,
                                 attnrt_message* error) noexcept {
    if (instance == nullptr || desc == nullptr || args == nullptr || exec == nullptr) {
      write_message(error, "append_kv: instance, desc, args and exec must not be NULL");
      return ATTNRT_ERROR_INVALID_ARGUMENT;
    }
    return guarded(error, [&] {
      check_append_kv(*desc, *args);
      attnrt_attention_desc plain = *desc;  // only the cache's fields matter to an append
      plain.causal = 0;
      plain.window_left = plain.window_right = -1;
      plain.softcap = 0.0f;
      plain.has_sinks = plain.has_alibi = plain.is_varlen = 0;
      plain.dropout_p = 0.0f;
      plain.return_lse = plain.deterministic = 0;
      plain.heads_q = plain.heads_kv;
      require_supported(capability_gap(plugin_capabilities<Plugin>(), plain));
      self(instance)->append_kv(*desc, *args, *exec);
    });
  }

  // ABI 1.4: validates the call (check_block_mask_args) and refuses a descriptor the plugin
  // could not run (its extensions, the capabilities) before the class evaluates mask_mod: the
  // mask is built for calls of this plugin.
  static attnrt_status create_block_mask(attnrt_instance* instance, const attnrt_attention_desc* desc,
                                         const attnrt_block_mask_args* args, const attnrt_exec* exec,
                                         attnrt_message* error) noexcept {
    if (instance == nullptr || desc == nullptr || args == nullptr || exec == nullptr) {
      write_message(error, "create_block_mask: instance, desc, args and exec must not be NULL");
      return ATTNRT_ERROR_INVALID_ARGUMENT;
    }
    return guarded(error, [&] {
      check_block_mask_args(*desc, *args);
      if (std::string why = unimplemented_extension_reason(*desc, implemented_extensions<Plugin>()); !why.empty()) {
        require_supported(why);
      }
      require_supported(capability_gap(plugin_capabilities<Plugin>(), *desc));
      self(instance)->create_block_mask(*desc, *args, *exec);
    });
  }
};

// The static function table for Plugin; built once, on first use.
template <class Plugin>
const attnrt_plugin_api* plugin_api() noexcept {
  static const attnrt_plugin_api api = [] {
    attnrt_plugin_api a{};
    a.struct_size = sizeof(attnrt_plugin_api);
    a.abi_major = ATTNRT_ABI_VERSION_MAJOR;
    a.abi_minor = ATTNRT_ABI_VERSION_MINOR;
    a.name = Plugin::kName;
    a.version = Plugin::kVersion;
    a.description = Plugin::kDescription;
    a.capabilities = &plugin_capabilities<Plugin>();
    a.create = &PluginAdapter<Plugin>::create;
    a.destroy = &PluginAdapter<Plugin>::destroy;
    a.supports = &PluginAdapter<Plugin>::supports;
    a.workspace_size = &PluginAdapter<Plugin>::workspace_size;
    a.forward = &PluginAdapter<Plugin>::forward;
    if constexpr (HasBackward<Plugin>) a.backward = &PluginAdapter<Plugin>::backward;
    if constexpr (HasAppendKv<Plugin>) a.append_kv = &PluginAdapter<Plugin>::append_kv;
    if constexpr (HasCreateBlockMask<Plugin>) a.create_block_mask = &PluginAdapter<Plugin>::create_block_mask;
    return a;
  }();
  return &api;
}

}  // namespace attnrt::sdk

// Defines the plugin's one exported symbol. Use once per shared library.
#define ATTNRT_DEFINE_PLUGIN(PluginClass)                                                                     \
  extern "C" ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api* attnrt_plugin_entry(uint32_t /*host_abi_major*/,   \
                                                                               uint32_t /*host_abi_minor*/) { \
    return ::attnrt::sdk::plugin_api<PluginClass>();                                                          \
  }

#endif  // ATTNRT_PLUGIN_HPP_
