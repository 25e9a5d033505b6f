// The driver API entry points libattnrt uses, resolved once from libcuda.so.1 (cuda.h's C
// signatures; only opaque handles and integers cross, so no CUDA header is needed).
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <string>

namespace attnrt::cuda {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;
using CUstream = void*;
using CUevent = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUmemoryPool = void*;

// cuda.h's CUmemPoolProps (CUmemPoolProps_v1), for a pool of device memory.
struct MemPoolProps {
  int alloc_type = 1;     // CU_MEM_ALLOCATION_TYPE_PINNED
  int handle_types = 0;   // CU_MEM_HANDLE_TYPE_NONE
  int location_type = 1;  // CUmemLocation.type: CU_MEM_LOCATION_TYPE_DEVICE
  int location_id = 0;    // CUmemLocation.id: the device ordinal
  void* win32_security_attributes = nullptr;
  size_t max_size = 0;  // 0: the system's default
  unsigned short usage = 0;
  unsigned char reserved[54] = {};
};
static_assert(sizeof(MemPoolProps) == 88, "CUmemPoolProps is 88 bytes on 64-bit targets");

struct Driver {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(int*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, int) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, int) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t*, int) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, int) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  // Streams of libattnrt's own (context parallelism's NCCL communication stream).
  CUresult (*cuStreamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned) = nullptr;
  CUresult (*cuStreamCreateWithPriority)(CUstream*, unsigned, int) = nullptr;
  CUresult (*cuCtxGetStreamPriorityRange)(int*, int*) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  // Context parallelism's CUDA BlockOps: its embedded kernels and its stream-ordered buffers.
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**) = nullptr;
  CUresult (*cuMemPoolCreate)(CUmemoryPool*, const MemPoolProps*) = nullptr;
  CUresult (*cuMemPoolSetAttribute)(CUmemoryPool, int, void*) = nullptr;
  CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr*, size_t, CUmemoryPool, CUstream) = nullptr;
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;  // a varlen ring's cu_seqlens

  // Throws attnrt::Error "<what>: CUDA error N (text)" when r is not CUDA_SUCCESS.
  void check(CUresult r, const char* what) const;
  // Makes device's primary context current on the calling thread (retained once per device).
  void make_current(DLDevice device) const;
};

// The process-wide driver; throws attnrt::Error saying why CUDA cannot be used.
const Driver& driver();

}  // namespace attnrt::cuda
