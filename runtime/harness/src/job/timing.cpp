#include <attnrt/harness/timing.hpp>
#include <attnrt/runtime/cuda_memory.hpp>

#include <algorithm>
#include <chrono>
#include <vector>

namespace attnrt {

double median_call_ms(DLDevice device, void* stream, int warmup, int iterations, const std::function<void()>& fn) {
  if (device.device_type == kDLCUDA) return cuda_median_ms(device, stream, warmup, iterations, fn);
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < std::max(iterations, 1); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

}  // namespace attnrt
