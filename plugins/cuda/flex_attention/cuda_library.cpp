#include "cuda_library.hpp"

#include <attnrt/status.hpp>

namespace attnrt::plugins::flex_cuda {

void device_error(const std::string& what, cudaError_t e) {
  throw sdk::Error(ATTNRT_ERROR_DEVICE,
                   "flex_attention: " + what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

cudaKernel_t library_kernel(cudaLibrary_t library, const std::string& name) {
  cudaKernel_t kernel = nullptr;
  if (cudaError_t e = cudaLibraryGetKernel(&kernel, library, name.c_str()); e != cudaSuccess) {
    device_error("finding " + name, e);
  }
  return kernel;
}

void read_library_array(cudaLibrary_t library, const char* name, long long* values, size_t count) {
  void* ptr = nullptr;
  size_t bytes = 0;
  if (cudaError_t e = cudaLibraryGetGlobal(&ptr, &bytes, library, name);
      e != cudaSuccess || bytes != count * sizeof(long long)) {
    device_error(std::string("finding ") + name, e == cudaSuccess ? cudaErrorInvalidSymbol : e);
  }
  if (cudaError_t e = cudaMemcpy(values, ptr, bytes, cudaMemcpyDeviceToHost); e != cudaSuccess) {
    device_error(std::string("reading ") + name, e);
  }
}

}  // namespace attnrt::plugins::flex_cuda
