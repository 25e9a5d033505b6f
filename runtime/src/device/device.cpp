// CUDA probing through the driver API, opened at run time (no link to CUDA; src/cuda).
#include "../cuda/cuda_driver.hpp"

#include <attnrt/runtime/device.hpp>
#include <attnrt/runtime/error.hpp>

#include <fmt/format.h>

#include <thread>

namespace attnrt {
namespace {

constexpr int kComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

DeviceInventory probe() {
  DeviceInventory inv;
  const unsigned threads = std::thread::hardware_concurrency();
  inv.cpu.dl = DLDevice{kDLCPU, 0};
  inv.cpu.name = fmt::format("cpu ({} threads)", threads);
  const cuda::Driver* d = nullptr;
  try {
    d = &cuda::driver();
  } catch (const Error& e) {
    inv.cuda_status = e.what();
    return inv;
  }
  int version = 0, count = 0;
  d->cuDriverGetVersion(&version);
  d->cuDeviceGetCount(&count);
  for (int i = 0; i < count; ++i) {
    int dev = 0;
    if (d->cuDeviceGet(&dev, i) != 0) continue;
    char name[256] = {0};
    int major = 0, minor = 0;
    size_t mem = 0;
    d->cuDeviceGetName(name, sizeof name, dev);
    d->cuDeviceGetAttribute(&major, kComputeCapabilityMajor, dev);
    d->cuDeviceGetAttribute(&minor, kComputeCapabilityMinor, dev);
    d->cuDeviceTotalMem(&mem, dev);
    DeviceInfo info;
    info.dl = DLDevice{kDLCUDA, i};
    info.name = name;
    info.cuda_arch = major * 10 + minor;
    info.memory_bytes = mem;
    inv.cuda.push_back(info);
  }
  inv.cuda_status =
      fmt::format("{} CUDA device(s), driver {}.{}", inv.cuda.size(), version / 1000, (version % 1000) / 10);
  return inv;
}

}  // namespace

std::string DeviceInfo::label() const {
  if (dl.device_type == kDLCUDA) return fmt::format("cuda:{} (sm_{})", dl.device_id, cuda_arch);
  return "cpu";
}

const DeviceInventory& probe_devices() {
  static const DeviceInventory inventory = probe();
  return inventory;
}

DeviceInfo select_device(const std::string& spec, const DeviceInventory& inv) {
  if (spec == "auto") return inv.cuda.empty() ? inv.cpu : inv.cuda.front();
  if (spec == "cpu") return inv.cpu;
  if (spec == "cuda" || spec.rfind("cuda:", 0) == 0) {
    int index = 0;
    if (spec.size() > 5) {
      try {
        index = std::stoi(spec.substr(5));
      } catch (const std::exception&) {
        throw Error("device '" + spec + "': expected cuda:N");
      }
    }
    // A well-formed request this machine cannot serve: the device's status, not the config's.
    if (inv.cuda.empty()) throw Error(ATTNRT_ERROR_DEVICE, "device '" + spec + "' requested but " + inv.cuda_status);
    if (index < 0 || index >= static_cast<int>(inv.cuda.size())) {
      throw Error(ATTNRT_ERROR_DEVICE,
                  fmt::format("device '{}' requested but only {} CUDA device(s) exist", spec, inv.cuda.size()));
    }
    return inv.cuda[index];
  }
  throw Error("unknown device '" + spec + "' (expected auto, cpu, cuda or cuda:N; attnrt runs on CPU and CUDA)");
}

}  // namespace attnrt
