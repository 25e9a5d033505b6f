// CUDA probing through the driver API, opened with Boost.DLL at run time (no link to CUDA).
#include <attnrt/runtime/device.hpp>
#include <attnrt/runtime/error.hpp>

#include <boost/dll/shared_library.hpp>

#include <fmt/format.h>

#include <thread>

namespace attnrt {
namespace {

// The few driver entry points used, with the driver API's C signatures (cuda.h).
using CUresult = int;
using CUdevice = int;
constexpr int kComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

DeviceInventory probe() {
  DeviceInventory inv;
  const unsigned threads = std::thread::hardware_concurrency();
  inv.cpu.dl = DLDevice{kDLCPU, 0};
  inv.cpu.name = fmt::format("cpu ({} threads)", threads);
  boost::dll::shared_library driver;
  try {
    driver.load("libcuda.so.1", boost::dll::load_mode::search_system_folders | boost::dll::load_mode::rtld_local);
  } catch (const std::exception&) {
    inv.cuda_status = "no CUDA driver (libcuda.so.1 not found)";
    return inv;
  }
  try {
    auto cuInit = driver.get<CUresult(unsigned)>("cuInit");
    auto cuDriverGetVersion = driver.get<CUresult(int*)>("cuDriverGetVersion");
    auto cuDeviceGetCount = driver.get<CUresult(int*)>("cuDeviceGetCount");
    auto cuDeviceGet = driver.get<CUresult(CUdevice*, int)>("cuDeviceGet");
    auto cuDeviceGetName = driver.get<CUresult(char*, int, CUdevice)>("cuDeviceGetName");
    auto cuDeviceGetAttribute = driver.get<CUresult(int*, int, CUdevice)>("cuDeviceGetAttribute");
    auto cuDeviceTotalMem = driver.get<CUresult(size_t*, CUdevice)>("cuDeviceTotalMem_v2");
    if (CUresult r = cuInit(0); r != 0) {
      inv.cuda_status = fmt::format("CUDA driver present but cuInit failed (CUresult {}): no usable GPU", r);
      return inv;
    }
    int version = 0, count = 0;
    cuDriverGetVersion(&version);
    cuDeviceGetCount(&count);
    for (int i = 0; i < count; ++i) {
      CUdevice dev = 0;
      if (cuDeviceGet(&dev, i) != 0) continue;
      char name[256] = {0};
      int major = 0, minor = 0;
      size_t mem = 0;
      cuDeviceGetName(name, sizeof name, dev);
      cuDeviceGetAttribute(&major, kComputeCapabilityMajor, dev);
      cuDeviceGetAttribute(&minor, kComputeCapabilityMinor, dev);
      cuDeviceTotalMem(&mem, dev);
      DeviceInfo info;
      info.dl = DLDevice{kDLCUDA, i};
      info.name = name;
      info.cuda_arch = major * 10 + minor;
      info.memory_bytes = mem;
      inv.cuda.push_back(info);
    }
    inv.cuda_status = fmt::format("{} CUDA device(s), driver {}.{}", inv.cuda.size(), version / 1000, (version % 1000) / 10);
  } catch (const std::exception& e) {
    inv.cuda_status = std::string("CUDA driver is missing an entry point: ") + e.what();
  }
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
    if (inv.cuda.empty()) throw Error("device '" + spec + "' requested but " + inv.cuda_status);
    if (index < 0 || index >= static_cast<int>(inv.cuda.size())) {
      throw Error(fmt::format("device '{}' requested but only {} CUDA device(s) exist", spec, inv.cuda.size()));
    }
    return inv.cuda[index];
  }
  throw Error("unknown device '" + spec + "' (expected auto, cpu, cuda or cuda:N; attnrt runs on CPU and CUDA)");
}

}  // namespace attnrt
