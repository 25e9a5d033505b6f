// An empty kernel's launch (empty_kernel.cu, compiled by nvcc): the floor that
// sdpa_cuda_host_bench.cpp measures a call's host time against.
#pragma once

#include <cuda_runtime_api.h>

namespace attnrt::bench {

// cudaLaunchKernel of a kernel with no parameters and no work, one thread, on `stream`.
cudaError_t launch_empty_kernel(cudaStream_t stream);

}  // namespace attnrt::bench
