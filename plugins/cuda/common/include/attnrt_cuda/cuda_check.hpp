// CUDA runtime errors as SDK errors: the plugin boundary turns them into ATTNRT_ERROR_DEVICE
// with the runtime's own text, so a failed launch never passes silently.
#pragma once

#include <attnrt/plugin.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace attnrt::cuda {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  throw sdk::Error(e == cudaErrorMemoryAllocation ? ATTNRT_ERROR_OUT_OF_MEMORY : ATTNRT_ERROR_DEVICE,
                   std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// Makes the call's device current on this thread (the host may call from any thread).
inline void use_device(const attnrt_attention_desc& d) {
  check_cuda(cudaSetDevice(d.device.device_id), "cudaSetDevice");
}

}  // namespace attnrt::cuda
