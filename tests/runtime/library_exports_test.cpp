// libattnrt exports its API and nothing else: the C host API (attnrt_*) and the attnrt
// namespace's C++ API; no yaml-cpp, fmt, spdlog, Boost or standard-library instantiation leaks
// into a host's symbol space (runtime/src/api/libattnrt.map).
#include <attnrt/harness/conformance.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "test_support.hpp"

namespace attnrt {
namespace {

std::filesystem::path libattnrt() { return test::plugins_dir().parent_path().parent_path() / "libattnrt.so"; }

bool is_api_symbol(const std::string& s) {
  for (const char* prefix : {"attnrt_", "_ZN6attnrt", "_ZNK6attnrt", "_ZTIN6attnrt", "_ZTSN6attnrt", "_ZTVN6attnrt"}) {
    if (s.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

TEST(LibraryExports, OnlyTheHostApiAndTheCxxApi) {
  const std::vector<std::string> symbols = elf_exported_symbols(libattnrt());
  size_t host_api = 0;
  for (const std::string& s : symbols) {
    EXPECT_TRUE(is_api_symbol(s)) << "libattnrt exports " << s;
    host_api += s.rfind("attnrt_", 0) == 0;
  }
  EXPECT_GE(host_api, 10u) << "the C host API functions of host_api.h";
}

TEST(LibraryExports, ContextParallelEntryPoints) {
  const std::vector<std::string> symbols = elf_exported_symbols(libattnrt());
  for (const char* name :
       {"attnrt_in_process_group_create", "attnrt_in_process_group_transport", "attnrt_nccl_unique_id",
        "attnrt_nccl_transport_create", "attnrt_nccl_transport_from_comm", "attnrt_transport_destroy",
        "attnrt_transport_synchronize", "attnrt_ring_create", "attnrt_ring_unsupported_reason", "attnrt_ring_forward",
        "attnrt_ring_backward", "attnrt_ring_destroy"}) {
    EXPECT_NE(std::find(symbols.begin(), symbols.end(), name), symbols.end()) << name << " (host_api.h, issue 20)";
  }
}

TEST(LibraryExports, InternalPiecesStayInside) {
  const std::vector<std::string> symbols = elf_exported_symbols(libattnrt());
  for (const std::string& s : symbols) {
    // The CUDA driver loader (src/cuda/cuda_driver.hpp) is not part of the API.
    EXPECT_EQ(s.find("4cuda6Driver"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace attnrt
