#include "onednn_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <type_traits>

namespace attnrt::plugins::sdpa {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// The implementation oneDNN picks for a bf16 x bf16 -> fp32 product of sdpa's forward shape
// (128 x 128 x 64); "" if it has none.
std::string bf16_matmul_impl(const OnednnLibrary& lib) {
  const OnednnApi& a = lib.api;
  dnnl_memory_desc_t src, weights, dst;
  const dnnl_dims_t src_dims = {128, 64}, weights_dims = {64, 128}, dst_dims = {128, 128};
  const dnnl_dims_t src_strides = {64, 1}, weights_strides = {1, 64}, dst_strides = {128, 1};
  dnnl_matmul_desc_t desc;
  if (a.memory_desc_init_by_strides(&src, 2, src_dims, dnnl_bf16, src_strides) != dnnl_success ||
      a.memory_desc_init_by_strides(&weights, 2, weights_dims, dnnl_bf16, weights_strides) != dnnl_success ||
      a.memory_desc_init_by_strides(&dst, 2, dst_dims, dnnl_f32, dst_strides) != dnnl_success ||
      a.matmul_desc_init(&desc, &src, &weights, nullptr, &dst) != dnnl_success) {
    return "";
  }
  dnnl_primitive_desc_t pd = nullptr;
  if (a.primitive_desc_create(&pd, &desc, nullptr, lib.engine, nullptr) != dnnl_success) return "";
  const char* impl = nullptr;
  std::string name;
  if (a.primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl) name = impl;
  a.primitive_desc_destroy(pd);
  return name;
}

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

OnednnLibrary open_onednn() {
  OnednnLibrary lib;
  const char* env = std::getenv("ATTNRT_ONEDNN_LIBRARY");
  const std::string name = env && env[0] ? env : "libdnnl.so.2";
  dlerror();
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | (kSanitized ? 0 : RTLD_DEEPBIND));
  if (!handle) {
    lib.error = "oneDNN, which sdpa's tile products run on, could not be loaded: " + dl_error() +
                (env && env[0] ? std::string(" (ATTNRT_ONEDNN_LIBRARY)")
                               : std::string(" (install oneDNN 2 or later: apt-get install libdnnl2, or set "
                                             "ATTNRT_ONEDNN_LIBRARY to libdnnl.so's path)"));
    return lib;
  }
  link_map* map = nullptr;
  lib.path = dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0] ? map->l_name : name;
  using Version = const dnnl_version_t* (*)();
  auto version = reinterpret_cast<Version>(dlsym(handle, "dnnl_version"));
  if (!version) {
    lib.error = lib.path + " is not oneDNN (no dnnl_version)";
    return lib;
  }
  const dnnl_version_t* v = version();
  lib.version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  if (v->major != 2) {
    // oneDNN 3 replaced the descriptor API (dnnl_matmul_desc_init) that sdpa calls.
    lib.error = "oneDNN " + lib.version + " at " + lib.path + ": sdpa needs oneDNN 2.x (its C API of descriptors)";
    return lib;
  }
  OnednnApi& a = lib.api;
  std::string missing;
  auto bind = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, symbol));
    if (!fn) missing += std::string(missing.empty() ? "" : ", ") + symbol;
  };
  bind(a.sgemm, "dnnl_sgemm");
  bind(a.engine_create, "dnnl_engine_create");
  bind(a.stream_create, "dnnl_stream_create");
  bind(a.stream_destroy, "dnnl_stream_destroy");
  bind(a.memory_desc_init_by_strides, "dnnl_memory_desc_init_by_strides");
  bind(a.memory_desc_get_size, "dnnl_memory_desc_get_size");
  bind(a.matmul_desc_init, "dnnl_matmul_desc_init");
  bind(a.primitive_attr_create, "dnnl_primitive_attr_create");
  bind(a.primitive_attr_destroy, "dnnl_primitive_attr_destroy");
  bind(a.primitive_attr_set_scratchpad_mode, "dnnl_primitive_attr_set_scratchpad_mode");
  bind(a.primitive_attr_set_post_ops, "dnnl_primitive_attr_set_post_ops");
  bind(a.post_ops_create, "dnnl_post_ops_create");
  bind(a.post_ops_destroy, "dnnl_post_ops_destroy");
  bind(a.post_ops_append_sum, "dnnl_post_ops_append_sum");
  bind(a.primitive_desc_create, "dnnl_primitive_desc_create");
  bind(a.primitive_desc_destroy, "dnnl_primitive_desc_destroy");
  bind(a.primitive_desc_query, "dnnl_primitive_desc_query");
  bind(a.primitive_desc_query_md, "dnnl_primitive_desc_query_md");
  bind(a.primitive_create, "dnnl_primitive_create");
  bind(a.primitive_destroy, "dnnl_primitive_destroy");
  bind(a.primitive_execute, "dnnl_primitive_execute");
  bind(a.memory_create, "dnnl_memory_create");
  bind(a.memory_destroy, "dnnl_memory_destroy");
  bind(a.memory_set_data_handle, "dnnl_memory_set_data_handle");
  if (!missing.empty()) {
    lib.error = "oneDNN " + lib.version + " at " + lib.path + " lacks " + missing;
    return lib;
  }
  if (const dnnl_status_t st = a.engine_create(&lib.engine, dnnl_cpu, 0); st != dnnl_success) {
    lib.error = "oneDNN " + lib.version + " at " + lib.path + ": no CPU engine (dnnl_status_t " +
                std::to_string(static_cast<int>(st)) + ")";
    return lib;
  }
  lib.bf16_impl = bf16_matmul_impl(lib);
  // Kernels with bf16 instructions (AVX512-BF16 dot products, AMX tiles); oneDNN's other bf16
  // paths convert to fp32 inside and are no faster than the fp32 path.
  lib.fast_bf16 = lib.bf16_impl.find("amx") != std::string::npos || lib.bf16_impl.find("bf16") != std::string::npos;
  return lib;  // the handle stays open for the process: the JIT kernels live in it
}

}  // namespace

const OnednnLibrary& onednn_library() {
  static const OnednnLibrary lib = open_onednn();
  return lib;
}

}  // namespace attnrt::plugins::sdpa
