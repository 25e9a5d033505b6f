// NVRTC for flex_attention's CUDA path: a translation unit (mods.hpp, Target::kCuda, followed by
// a kernel's source) to a cubin for one GPU architecture, with the compiler's log. The CUDA
// plugin keeps the result in the disk cache (disk_cache.hpp) under a key that includes
// nvrtc_version() and the arch.
#pragma once

#include <string>
#include <vector>

namespace attnrt::kernels::flex {

struct NvrtcOutput {
  std::string cubin;                       // SASS for sm_<arch> (sm_90a when arch is 90)
  std::string log;                         // NVRTC's messages, warnings included
  std::vector<std::string> lowered_names;  // of the name expressions, in order
};

// A header NVRTC resolves by its #include name (no file system).
struct NvrtcHeader {
  std::string include_name, text;
};

// Compiles `source` (named `name` in messages) for compute capability `arch` (major*10+minor)
// with in-memory headers, extra include directories, and the mangled names of
// `name_expressions` (template kernels) asked for. Throws Error(ATTNRT_ERROR_INVALID_ARGUMENT)
// with NVRTC's log when it does not compile.
NvrtcOutput nvrtc_compile(const std::string& source, const std::string& name, int arch,
                          const std::vector<std::string>& include_dirs = {},
                          const std::vector<NvrtcHeader>& headers = {},
                          const std::vector<std::string>& name_expressions = {});

// Compiles a self-contained `source` (no headers) to LTO-IR for compute_<arch>, relocatable
// (-dlto -rdc), for nvJitLink to link into a prebuilt kernel's LTO-IR (the flex_attention CUDA
// plugin's Hopper path). Errors as nvrtc_compile.
std::string nvrtc_compile_ltoir(const std::string& source, const std::string& name, int arch);

// "13.0": the NVRTC this build links, for cache keys.
std::string nvrtc_version();

}  // namespace attnrt::kernels::flex
