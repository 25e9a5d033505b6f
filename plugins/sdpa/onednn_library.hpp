// oneDNN, opened at run time: the plugin has no link-time dependency on it, so a machine
// without libdnnl still loads sdpa and gets a refusal with the reason (the runtime falls back).
//
// Opened with RTLD_DEEPBIND (except under sanitizers, whose runtimes refuse it): PyTorch's
// libtorch_cpu carries its own oneDNN and exports some of its internal symbols (for example the
// std::call_once body of gemm_info_t::jit_init); without DEEPBIND Debian's libdnnl bound them to
// torch's copy in a process that had loaded torch, and every sgemm returned dnnl_unimplemented
// (seen in bench/cpu_attention_bench.cpp, which links libtorch).
#pragma once

#include <oneapi/dnnl/dnnl.h>

#include <string>

namespace attnrt::plugins::sdpa {

// The entry points sdpa uses, as the C API (oneapi/dnnl/dnnl.h, oneDNN 2.x) declares them.
struct OnednnApi {
  decltype(&dnnl_sgemm) sgemm = nullptr;
  decltype(&dnnl_engine_create) engine_create = nullptr;
  decltype(&dnnl_stream_create) stream_create = nullptr;
  decltype(&dnnl_stream_destroy) stream_destroy = nullptr;
  decltype(&dnnl_memory_desc_init_by_strides) memory_desc_init_by_strides = nullptr;
  decltype(&dnnl_memory_desc_get_size) memory_desc_get_size = nullptr;
  decltype(&dnnl_matmul_desc_init) matmul_desc_init = nullptr;
  decltype(&dnnl_primitive_attr_create) primitive_attr_create = nullptr;
  decltype(&dnnl_primitive_attr_destroy) primitive_attr_destroy = nullptr;
  decltype(&dnnl_primitive_attr_set_scratchpad_mode) primitive_attr_set_scratchpad_mode = nullptr;
  decltype(&dnnl_primitive_attr_set_post_ops) primitive_attr_set_post_ops = nullptr;
  decltype(&dnnl_post_ops_create) post_ops_create = nullptr;
  decltype(&dnnl_post_ops_destroy) post_ops_destroy = nullptr;
  decltype(&dnnl_post_ops_append_sum) post_ops_append_sum = nullptr;
  decltype(&dnnl_primitive_desc_create) primitive_desc_create = nullptr;
  decltype(&dnnl_primitive_desc_destroy) primitive_desc_destroy = nullptr;
  decltype(&dnnl_primitive_desc_query) primitive_desc_query = nullptr;
  decltype(&dnnl_primitive_desc_query_md) primitive_desc_query_md = nullptr;
  decltype(&dnnl_primitive_create) primitive_create = nullptr;
  decltype(&dnnl_primitive_destroy) primitive_destroy = nullptr;
  decltype(&dnnl_primitive_execute) primitive_execute = nullptr;
  decltype(&dnnl_memory_create) memory_create = nullptr;
  decltype(&dnnl_memory_destroy) memory_destroy = nullptr;
  decltype(&dnnl_memory_set_data_handle) memory_set_data_handle = nullptr;
};

struct OnednnLibrary {
  OnednnApi api;
  dnnl_engine_t engine = nullptr;  // the CPU engine, shared by every thread (oneDNN allows it)
  std::string path;                // where it was found
  std::string version;             // "2.6.3"
  std::string error;               // why it cannot be used; "" when api and engine are set
  // bf16 x bf16 -> fp32 products by a matmul that is not a reference implementation on this CPU
  // (AMX or AVX512-BF16 kernels); otherwise bf16 inputs take the fp32 path.
  bool fast_bf16 = false;
  std::string bf16_impl;  // the implementation oneDNN picked for them ("brg:avx512_core_amx")
};

// Opened once per process, on first use. ATTNRT_ONEDNN_LIBRARY names the file to open instead of
// "libdnnl.so.2" (a path or a soname).
const OnednnLibrary& onednn_library();

}  // namespace attnrt::plugins::sdpa
