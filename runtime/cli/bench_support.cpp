#include "bench_support.hpp"

#include <attnrt/runtime/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <sstream>

namespace attnrt::cli {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::vector<int> split_ints(const std::string& s, const char* what) {
  std::vector<int> out;
  for (const std::string& x : split(s)) {
    try {
      out.push_back(std::stoi(x));
    } catch (const std::exception&) {
      throw Error(fmt::format("--{}: '{}' is not an integer", what, x));
    }
    if (out.back() <= 0) throw Error(fmt::format("--{}: {} must be positive", what, x));
  }
  return out;
}

HostTensor random_block(DLDataType dtype, uint64_t seed) {
  HostTensor block({int64_t(1) << 22}, dtype);
  std::mt19937_64 rng(seed);
  block.fill_normal(rng);
  return block;
}

void upload_repeating(CudaBuffer& buffer, const HostTensor& block, int64_t first) {
  const size_t bytes = buffer.size(), period = block.nbytes();
  const size_t offset = size_t(first % block.numel()) * (period / size_t(block.numel()));
  std::vector<std::byte> host(bytes);
  size_t at = offset % period;
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(bytes - done, period - at);
    std::memcpy(host.data() + done, static_cast<const std::byte*>(block.data()) + at, n);
    done += n;
    at = 0;
  }
  buffer.upload(host.data(), bytes);
}

}  // namespace attnrt::cli
