// libcudnn, opened at run time (the cuDNN frontend's dynamic-loading mode,
// NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING): the plugin links no cuDNN, so it loads everywhere and
// refuses calls with the reason where cuDNN cannot be opened.
//
// Where it is looked for: ATTNRT_CUDNN_LIBRARY (a path to libcudnn.so.9) when set, else
// "libcudnn.so.9" through the dynamic loader's search (LD_LIBRARY_PATH, then the ld.so cache:
// a system cuDNN such as /usr/lib/x86_64-linux-gnu's). PyTorch's pip cuDNN sits in
// site-packages/nvidia/cudnn/lib, which the loader does not search: put that folder on
// LD_LIBRARY_PATH to use it. The frontend also opens the CUDA runtime (libcudart.so.13) by name;
// where the loader cannot find it, the CUDA toolkit's and pip's usual folders are tried.
#pragma once

#include <cstddef>
#include <string>

namespace attnrt::plugins::sdpa_cuda {

struct CudnnLibrary {
  bool loaded = false;
  std::string path;                    // the file opened
  size_t version = 0;                  // cudnnGetVersion(): major*10000 + minor*100 + patch
  std::string error;                   // why it is not loaded: the refusal's reason
  std::string version_string() const;  // "cuDNN 9.19.0"
};

// Opens libcudnn (once per process, thread-safe) and sets the frontend's handle to it.
const CudnnLibrary& cudnn_library();

}  // namespace attnrt::plugins::sdpa_cuda
