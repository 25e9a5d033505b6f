// The NCCL transport without a GPU (runtime/include/attnrt/runtime/parallel/nccl_transport.hpp):
// what can be checked here is loading libnccl at run time and the refusals, each with a reason
// that says what is missing. Exchanges need two GPUs (docs/distributed.md: not yet run).
#include "test_support.hpp"

#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/parallel/nccl_transport.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace attnrt {
namespace {

TEST(NcclTransport, MissingLibraryIsRefusedWithTheReason) {
  const std::string path = (test::fixtures() / "no_such_dir" / "libnccl.so.2").string();
  const cp::NcclLibraryInfo info = cp::nccl_library_info(path);
  EXPECT_FALSE(info.available);
  EXPECT_EQ(info.path, path);
  EXPECT_NE(info.reason.find("NCCL library " + path + " cannot be opened"), std::string::npos) << info.reason;
  EXPECT_NE(info.reason.find("ATTNRT_NCCL_LIBRARY"), std::string::npos) << info.reason;
  try {
    cp::NcclTransport t(cp::NcclUniqueId{}, 0, 2, DLDevice{kDLCUDA, 0}, path);
    ADD_FAILURE() << "a transport without libnccl";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ATTNRT_ERROR_UNSUPPORTED) << e.what();
    EXPECT_NE(std::string(e.what()).find("context parallel: NCCL library " + path), std::string::npos) << e.what();
  }
  EXPECT_THROW(cp::nccl_unique_id(path), Error);
}

// ATTNRT_NCCL_LIBRARY chooses the file when no library is named.
TEST(NcclTransport, EnvironmentNamesTheLibrary) {
  const std::string path = (test::fixtures() / "no_such_dir" / "libnccl_from_env.so.2").string();
  ::setenv("ATTNRT_NCCL_LIBRARY", path.c_str(), 1);
  const cp::NcclLibraryInfo info = cp::nccl_library_info();
  ::unsetenv("ATTNRT_NCCL_LIBRARY");
  EXPECT_FALSE(info.available);
  EXPECT_EQ(info.path, path);
}

// A library that is not NCCL (here libattnrt's CPU plugin) is refused naming the first missing
// entry point, not called.
TEST(NcclTransport, LibraryWithoutNcclIsRefused) {
  const std::string path = (test::plugins_dir() / "eager" / "libattnrt_eager.so").string();
  const cp::NcclLibraryInfo info = cp::nccl_library_info(path);
  EXPECT_FALSE(info.available);
  EXPECT_NE(info.reason.find(path + " is not a usable NCCL library: it has no ncclGetVersion"), std::string::npos)
      << info.reason;
}

TEST(NcclTransport, NeedsACudaDeviceAndAValidRank) {
  try {
    cp::NcclTransport t(cp::NcclUniqueId{}, 0, 2, DLDevice{kDLCPU, 0});
    ADD_FAILURE() << "a CPU device accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ATTNRT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("device must be CUDA"), std::string::npos) << e.what();
  }
  try {
    cp::NcclTransport t(cp::NcclUniqueId{}, 2, 2, DLDevice{kDLCUDA, 0});
    ADD_FAILURE() << "rank 2 of 2 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 2 is outside [0, 2)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cp::NcclTransport(nullptr, DLDevice{kDLCUDA, 0}), Error);
}

// Where the machine has libnccl.so.2 (the CUDA toolkit's, or PyTorch's wheel on the library
// path), it loads and reports a version of 2.7 or newer; elsewhere the reason is shown.
TEST(NcclTransport, SystemLibraryLoadsWhereInstalled) {
  const cp::NcclLibraryInfo info = cp::nccl_library_info();
  if (!info.available) GTEST_SKIP() << info.reason;
  EXPECT_GE(info.version, 2700);
  EXPECT_EQ(info.version_text.rfind("2.", 0), 0u) << info.version_text;
}

}  // namespace
}  // namespace attnrt
