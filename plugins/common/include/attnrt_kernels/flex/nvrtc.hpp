// NVRTC for flex_attention's CUDA path: a translation unit (mods.hpp, Target::kCuda, followed by
// a kernel's source) to a cubin for one GPU architecture, with the compiler's log. The CUDA
// plugin keeps the result in the disk cache (disk_cache.hpp) under a key that includes
// nvrtc_version() and the arch.
#pragma once

#include <string>
#include <vector>

namespace attnrt::kernels::flex {

struct NvrtcOutput {
  std::string cubin;  // SASS for sm_<arch> (a "a" suffix for sm_90a's wgmma when arch is 90)
  std::string log;    // NVRTC's messages, warnings included
};

// Compiles `source` (named `name` in messages) for compute capability `arch` (major*10+minor)
// with the given extra include directories. Throws Error(ATTNRT_ERROR_INVALID_ARGUMENT) with
// NVRTC's log when it does not compile.
NvrtcOutput nvrtc_compile(const std::string& source, const std::string& name, int arch,
                          const std::vector<std::string>& include_dirs = {});

// "13.0": the NVRTC this build links, for cache keys.
std::string nvrtc_version();

}  // namespace attnrt::kernels::flex
