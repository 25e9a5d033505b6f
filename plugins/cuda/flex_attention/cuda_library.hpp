// What flex_attention's two kinds of modules (kernel_module.hpp: NVRTC's; hopper_module.hpp:
// nvJitLink's) do with a loaded cudaLibrary_t: find a kernel, read the launch shape a module
// exports as a __device__ array of long long, and report CUDA errors as ATTNRT_ERROR_DEVICE.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace attnrt::plugins::flex_cuda {

// Throws sdk::Error(ATTNRT_ERROR_DEVICE) naming `what` and the CUDA error.
[[noreturn]] void device_error(const std::string& what, cudaError_t e);

// The library's kernel named `name` (a C name or a lowered C++ name).
cudaKernel_t library_kernel(cudaLibrary_t library, const std::string& name);

// The library's __device__ array `name` of exactly `count` long longs, copied into `values`.
void read_library_array(cudaLibrary_t library, const char* name, long long* values, size_t count);

}  // namespace attnrt::plugins::flex_cuda
