// The C host API over attnrt::Runtime. No exception crosses it.
#include "host_api_internal.hpp"

#include <attnrt/host_api.h>
#include <attnrt/plugin.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/log.hpp>
#include <attnrt/runtime/runtime.hpp>

#include <memory>
#include <new>
#include <string>
#include <string_view>

using attnrt::capi::fail;
using attnrt::capi::guard;
using attnrt::capi::null_argument;

extern "C" {

attnrt_status attnrt_runtime_create(const char* config_path, const char* const* overrides, size_t num_overrides,
                                    attnrt_runtime** runtime, attnrt_message* error) {
  if (runtime == nullptr) return null_argument(error, "attnrt_runtime_create", "runtime");
  *runtime = nullptr;
  return guard(error, [&] {
    attnrt::RuntimeOptions options;
    if (config_path) options.config_files.emplace_back(config_path);
    for (size_t i = 0; i < num_overrides; ++i) {
      if (!overrides || !overrides[i]) {
        throw attnrt::Error("attnrt_runtime_create: overrides[" + std::to_string(i) + "] must not be NULL");
      }
      options.overrides.emplace_back(overrides[i]);
    }
    auto r = std::make_unique<attnrt_runtime>();
    r->runtime = std::make_unique<attnrt::Runtime>(options);
    *runtime = r.release();
  });
}

void attnrt_runtime_destroy(attnrt_runtime* runtime) { delete runtime; }

size_t attnrt_runtime_site_count(const attnrt_runtime* runtime) {
  return runtime ? runtime->runtime->sites().sites.size() : 0;
}

const char* attnrt_runtime_site_name(const attnrt_runtime* runtime, size_t index) {
  if (!runtime || index >= runtime->runtime->sites().sites.size()) return nullptr;
  return runtime->runtime->sites().sites[index].name.c_str();
}

const char* attnrt_runtime_site_value(const attnrt_runtime* runtime, size_t index) {
  if (!runtime || index >= runtime->runtime->sites().sites.size()) return nullptr;
  return runtime->runtime->sites().sites[index].value.c_str();
}

attnrt_status attnrt_resolve(attnrt_runtime* runtime, const char* site, const char* value, attnrt_attention_desc* desc,
                             attnrt_backend_handle** backend, attnrt_message* error) {
  if (!runtime || !site || !desc || !backend) {
    attnrt::sdk::write_message(error, "attnrt_resolve: runtime, site, desc and backend must not be NULL");
    return ATTNRT_ERROR_INVALID_ARGUMENT;
  }
  *backend = nullptr;
  attnrt_status status = ATTNRT_OK;
  const attnrt_status guarded = guard(error, [&] {
    std::string v = value ? value : "";
    if (!value) {
      for (const auto& s : runtime->runtime->sites().sites) {
        if (s.name == site) v = s.value;
      }
      if (v.empty()) throw attnrt::Error(std::string("no attention site named '") + site + "' in the configuration");
    }
    attnrt::Resolution res = runtime->runtime->resolver().resolve(site, v, *desc);
    if (!res.ok()) {
      attnrt::sdk::write_message(error, res.error.c_str());
      status = ATTNRT_ERROR_UNSUPPORTED;
      return;
    }
    runtime->runtime->resolver().bind_device(*desc);
    *backend = new attnrt_backend_handle{res.backend, res.chosen, res.context_parallel};
  });
  return guarded != ATTNRT_OK ? guarded : status;
}

const char* attnrt_backend_name(const attnrt_backend_handle* backend) {
  return backend ? backend->name.c_str() : nullptr;
}

void attnrt_backend_release(attnrt_backend_handle* backend) { delete backend; }

attnrt_status attnrt_backend_forward(attnrt_backend_handle* backend, const attnrt_attention_desc* desc,
                                     const attnrt_forward_args* args, int32_t num_threads, void* stream,
                                     attnrt_message* error) {
  if (!backend || !desc || !args) {
    return null_argument(error, "attnrt_backend_forward", !backend ? "backend" : !desc ? "desc" : "args");
  }
  return guard(error, [&] { backend->backend->forward(*desc, *args, num_threads, stream); });
}

attnrt_status attnrt_backend_backward(attnrt_backend_handle* backend, const attnrt_attention_desc* desc,
                                      const attnrt_backward_args* args, int32_t num_threads, void* stream,
                                      attnrt_message* error) {
  if (!backend || !desc || !args) {
    return null_argument(error, "attnrt_backend_backward", !backend ? "backend" : !desc ? "desc" : "args");
  }
  return guard(error, [&] { backend->backend->backward(*desc, *args, num_threads, stream); });
}

const char* attnrt_status_string(attnrt_status status) { return attnrt::status_name(status); }

attnrt_status attnrt_backend_workspace_size(attnrt_backend_handle* backend, const attnrt_attention_desc* desc,
                                            int32_t is_backward, int32_t num_threads, size_t* bytes,
                                            attnrt_message* error) {
  if (!backend || !desc || !bytes) {
    return null_argument(error, "attnrt_backend_workspace_size", !backend ? "backend" : !desc ? "desc" : "bytes");
  }
  return guard(error, [&] { *bytes = backend->backend->required_workspace(*desc, is_backward != 0, num_threads); });
}

attnrt_status attnrt_backend_forward_with_workspace(attnrt_backend_handle* backend, const attnrt_attention_desc* desc,
                                                    const attnrt_forward_args* args, const attnrt_exec* exec,
                                                    attnrt_message* error) {
  if (!backend || !desc || !args || !exec) {
    return null_argument(error, "attnrt_backend_forward_with_workspace",
                         !backend ? "backend"
                         : !desc  ? "desc"
                         : !args  ? "args"
                                  : "exec");
  }
  return guard(error, [&] { backend->backend->forward(*desc, *args, *exec); });
}

attnrt_status attnrt_backend_backward_with_workspace(attnrt_backend_handle* backend, const attnrt_attention_desc* desc,
                                                     const attnrt_backward_args* args, const attnrt_exec* exec,
                                                     attnrt_message* error) {
  if (!backend || !desc || !args || !exec) {
    return null_argument(error, "attnrt_backend_backward_with_workspace",
                         !backend ? "backend"
                         : !desc  ? "desc"
                         : !args  ? "args"
                                  : "exec");
  }
  return guard(error, [&] { backend->backend->backward(*desc, *args, *exec); });
}

attnrt_status attnrt_backend_append_kv(attnrt_backend_handle* backend, const attnrt_attention_desc* desc,
                                       const attnrt_append_kv_args* args, const attnrt_exec* exec,
                                       attnrt_message* error) {
  if (!backend || !desc || !args || !exec) {
    return null_argument(error, "attnrt_backend_append_kv",
                         !backend ? "backend"
                         : !desc  ? "desc"
                         : !args  ? "args"
                                  : "exec");
  }
  return guard(error, [&] { backend->backend->append_kv(*desc, *args, *exec); });
}

attnrt_status attnrt_backend_create_block_mask(attnrt_backend_handle* backend, const attnrt_attention_desc* desc,
                                               const attnrt_block_mask_args* args, const attnrt_exec* exec,
                                               attnrt_message* error) {
  if (!backend || !desc || !args || !exec) {
    return null_argument(error, "attnrt_backend_create_block_mask",
                         !backend ? "backend"
                         : !desc  ? "desc"
                         : !args  ? "args"
                                  : "exec");
  }
  return guard(error, [&] { backend->backend->create_block_mask(*desc, *args, *exec); });
}

attnrt_status attnrt_set_log_callback(attnrt_log_fn fn, void* user_data, attnrt_log_level min_level) {
  const int level = static_cast<int>(min_level);
  if (level < ATTNRT_LOG_DEBUG || level > ATTNRT_LOG_ERROR) return ATTNRT_ERROR_INVALID_ARGUMENT;
  if (!fn) {
    attnrt::set_log_callback(nullptr, attnrt::LogLevel::kOff);
    return ATTNRT_OK;
  }
  attnrt::set_log_callback(
      [fn, user_data](attnrt::LogLevel l, std::string_view message) {
        const std::string text(message);  // NUL-terminated for C
        fn(user_data, static_cast<attnrt_log_level>(l), text.c_str());
      },
      static_cast<attnrt::LogLevel>(level));
  return ATTNRT_OK;
}

}  // extern "C"
