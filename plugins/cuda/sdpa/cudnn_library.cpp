// Opening libcudnn at run time (cudnn_library.hpp).
#include "cudnn_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <mutex>
#include <vector>

// The frontend's handle to libcudnn (declared by cudnn_frontend_shim.h in dynamic-loading mode;
// defined once per program by its user).
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}

namespace attnrt::plugins::sdpa_cuda {
namespace {

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

std::string loaded_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0]) return map->l_name;
  return fallback;
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The frontend opens "libcudart.so.13" by name (cudnn_frontend_shim.h, load_cudart_so). A copy
// opened here by path registers that soname, so the frontend's later dlopen finds it.
std::string ensure_cudart(const std::string& cudnn_path) {
  if (void* h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL)) {
    (void)h;  // kept open for the process
    return "";
  }
  const std::string first_error = dl_error();
  const std::string pip = folder_of(folder_of(folder_of(cudnn_path)));  // site-packages/nvidia
  const std::vector<std::string> candidates = {
      pip + "/cu13/lib/libcudart.so.13", pip + "/cuda_runtime/lib/libcudart.so.13",
      "/usr/local/cuda/lib64/libcudart.so.13", "/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.13"};
  for (const std::string& c : candidates) {
    if (dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) return "";
  }
  return "the CUDA 13 runtime libcudart.so.13, which the cuDNN frontend opens at run time, was not found (" +
         first_error +
         "; also tried the CUDA toolkit's lib64 and pip's nvidia/cu13/lib): add its folder to "
         "LD_LIBRARY_PATH";
}

CudnnLibrary open_cudnn() {
  CudnnLibrary lib;
  const char* env = std::getenv("ATTNRT_CUDNN_LIBRARY");
  const std::string name = env && env[0] ? env : "libcudnn.so.9";
  dlerror();
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    lib.error = "cuDNN could not be loaded: " + dl_error() +
                (env && env[0] ? std::string(" (ATTNRT_CUDNN_LIBRARY)")
                               : std::string(" (install cuDNN 9 and put its lib folder on LD_LIBRARY_PATH, for "
                                             "example PyTorch's site-packages/nvidia/cudnn/lib, or set "
                                             "ATTNRT_CUDNN_LIBRARY to libcudnn.so.9's path)"));
    return lib;
  }
  lib.path = loaded_path(handle, name);
  using GetVersion = size_t (*)();
  auto get_version = reinterpret_cast<GetVersion>(dlsym(handle, "cudnnGetVersion"));
  if (!get_version) {
    lib.error = lib.path + " is not cuDNN (no cudnnGetVersion)";
    return lib;
  }
  lib.version = get_version();
  if (lib.version < 90000 || lib.version >= 100000) {
    lib.error = lib.version_string() + " at " + lib.path + ": cuDNN 9 is required";
    return lib;
  }
  if (std::string why = ensure_cudart(lib.path); !why.empty()) {
    lib.error = lib.version_string() + " at " + lib.path + ": " + why;
    return lib;
  }
  cudnn_frontend::cudnn_dlhandle = handle;  // never closed: built plans live as long as the process
  lib.loaded = true;
  return lib;
}

}  // namespace

std::string CudnnLibrary::version_string() const {
  return "cuDNN " + std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
         std::to_string(version % 100);
}

const CudnnLibrary& cudnn_library() {
  static const CudnnLibrary lib = open_cudnn();
  return lib;
}

}  // namespace attnrt::plugins::sdpa_cuda
