// The devices this machine offers. CUDA is probed through the driver library (libcuda.so.1),
// opened at run time: libattnrt has no link-time dependency on CUDA and works where none is
// installed, reporting why CUDA is unavailable instead.
#pragma once

#include <attnrt/runtime/export.hpp>

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>
#include <vector>

namespace attnrt {

struct ATTNRT_API DeviceInfo {
  DLDevice dl{kDLCPU, 0};
  std::string name;       // "cpu (16 threads)" or "NVIDIA H100 80GB HBM3"
  int32_t cuda_arch = 0;  // major*10+minor for CUDA devices
  uint64_t memory_bytes = 0;

  std::string label() const;  // "cpu", "cuda:0 (sm_90)"
};

struct DeviceInventory {
  DeviceInfo cpu;
  std::vector<DeviceInfo> cuda;
  std::string cuda_status;  // why there is no CUDA device, or "N device(s), driver X"
};

// Probes once per process (cached).
ATTNRT_API const DeviceInventory& probe_devices();

// "auto" (first CUDA device, else CPU), "cpu", "cuda", "cuda:N". Throws attnrt::Error naming
// what is missing when the requested device does not exist here.
ATTNRT_API DeviceInfo select_device(const std::string& spec, const DeviceInventory& inventory);

}  // namespace attnrt
