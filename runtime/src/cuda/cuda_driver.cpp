#include "cuda_driver.hpp"

#include <attnrt/runtime/error.hpp>

#include <fmt/format.h>
#include <boost/dll/shared_library.hpp>

#include <map>
#include <mutex>

namespace attnrt::cuda {
namespace {

struct Loaded {
  boost::dll::shared_library library;
  Driver driver;
  std::string error;
};

template <class Fn>
void bind(boost::dll::shared_library& lib, Fn*& fn, const char* name) {
  fn = &lib.get<Fn>(name);
}

Loaded load() {
  Loaded l;
  try {
    l.library.load("libcuda.so.1", boost::dll::load_mode::search_system_folders | boost::dll::load_mode::rtld_local);
  } catch (const std::exception&) {
    l.error = "no CUDA driver (libcuda.so.1 not found)";
    return l;
  }
  try {
    Driver& d = l.driver;
    bind(l.library, d.cuInit, "cuInit");
    bind(l.library, d.cuDriverGetVersion, "cuDriverGetVersion");
    bind(l.library, d.cuDeviceGetCount, "cuDeviceGetCount");
    bind(l.library, d.cuDeviceGet, "cuDeviceGet");
    bind(l.library, d.cuDeviceGetName, "cuDeviceGetName");
    bind(l.library, d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
    bind(l.library, d.cuDeviceTotalMem, "cuDeviceTotalMem_v2");
    bind(l.library, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    bind(l.library, d.cuCtxSetCurrent, "cuCtxSetCurrent");
    bind(l.library, d.cuCtxSynchronize, "cuCtxSynchronize");
    bind(l.library, d.cuMemAlloc, "cuMemAlloc_v2");
    bind(l.library, d.cuMemFree, "cuMemFree_v2");
    bind(l.library, d.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    bind(l.library, d.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    bind(l.library, d.cuMemsetD8Async, "cuMemsetD8Async");
    bind(l.library, d.cuEventCreate, "cuEventCreate");
    bind(l.library, d.cuEventRecord, "cuEventRecord");
    bind(l.library, d.cuEventSynchronize, "cuEventSynchronize");
    bind(l.library, d.cuEventElapsedTime, "cuEventElapsedTime");
    bind(l.library, d.cuEventDestroy, "cuEventDestroy_v2");
    bind(l.library, d.cuGetErrorString, "cuGetErrorString");
    bind(l.library, d.cuStreamCreate, "cuStreamCreate");
    bind(l.library, d.cuStreamDestroy, "cuStreamDestroy_v2");
    bind(l.library, d.cuStreamWaitEvent, "cuStreamWaitEvent");
    bind(l.library, d.cuStreamCreateWithPriority, "cuStreamCreateWithPriority");
    bind(l.library, d.cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange");
    bind(l.library, d.cuStreamSynchronize, "cuStreamSynchronize");
    bind(l.library, d.cuEventQuery, "cuEventQuery");
    bind(l.library, d.cuModuleLoadData, "cuModuleLoadData");
    bind(l.library, d.cuModuleGetFunction, "cuModuleGetFunction");
    bind(l.library, d.cuLaunchKernel, "cuLaunchKernel");
    // Stream-ordered allocation came with CUDA 11.2's driver (460); every driver that runs the
    // plugins' sm_80 code has it.
    bind(l.library, d.cuMemPoolCreate, "cuMemPoolCreate");
    bind(l.library, d.cuMemPoolSetAttribute, "cuMemPoolSetAttribute");
    bind(l.library, d.cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync");
    bind(l.library, d.cuMemFreeAsync, "cuMemFreeAsync");
    bind(l.library, d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    if (const CUresult r = d.cuInit(0); r != 0) {
      l.error = fmt::format("CUDA driver present but cuInit failed (CUresult {}): no usable GPU", r);
    }
  } catch (const std::exception& e) {
    l.error = std::string("CUDA driver is missing an entry point: ") + e.what();
  }
  return l;
}

}  // namespace

void Driver::check(CUresult r, const char* what) const {
  if (r == 0) return;
  const char* text = nullptr;
  if (cuGetErrorString) cuGetErrorString(r, &text);
  // CUDA_ERROR_OUT_OF_MEMORY (2) is the one driver error a caller can act on (smaller batch,
  // free memory); every other one is the device's or the driver's.
  constexpr CUresult kOutOfMemory = 2;
  throw Error(r == kOutOfMemory ? ATTNRT_ERROR_OUT_OF_MEMORY : ATTNRT_ERROR_DEVICE,
              fmt::format("{}: CUDA error {} ({})", what, r, text ? text : "unknown"));
}

void Driver::make_current(DLDevice device) const {
  if (device.device_type != kDLCUDA) throw Error("not a CUDA device");
  static std::mutex mutex;
  static std::map<int, CUcontext> contexts;
  CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = contexts.find(device.device_id);
    if (it == contexts.end()) {
      int dev = 0;
      check(cuDeviceGet(&dev, device.device_id), "cuDeviceGet");
      check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
      contexts[device.device_id] = ctx;  // kept for the process: plugins share it
    } else {
      ctx = it->second;
    }
  }
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

const Driver& driver() {
  // Never unloaded: plugins' CUDA runtimes hold the same driver.
  static Loaded* loaded = new Loaded(load());
  if (!loaded->error.empty()) throw Error(ATTNRT_ERROR_DEVICE, loaded->error);  // CUDA unavailable
  return loaded->driver;
}

}  // namespace attnrt::cuda
