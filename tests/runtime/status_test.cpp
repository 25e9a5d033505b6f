// Status codes survive every layer: one test per attnrt_status through the C++ API
// (attnrt::Error::status()) and through the C host API, each checking the message says what
// failed. Plugin-side failures come from the `failing` fixture, told which status to fail with
// through desc.dropout_seed (tests/fixtures/plugins/broken_plugins.cpp).
#include <attnrt/host_api.h>
#include <attnrt/harness/workload.hpp>
#include <attnrt/plugin.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/cuda_memory.hpp>
#include <attnrt/runtime/device.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/plugin_library.hpp>
#include <attnrt/runtime/runtime.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace attnrt {
namespace {

using sdk::MessageBuffer;
using test::fixtures;

const std::filesystem::path kFailingDir = fixtures() / "broken/failing";
const std::filesystem::path kFailingLib = kFailingDir / "libattnrt_failing.so";
const std::filesystem::path kCReferenceDir = fixtures() / "plugins/c_reference";
const std::filesystem::path kCReferenceLib = kCReferenceDir / "libattnrt_c_reference.so";
// More than any machine's address space: every allocator refuses it.
constexpr uint64_t kHugeBytes = uint64_t{1} << 62;

Workload small_workload() {
  WorkloadSpec spec;
  spec.batch = 1;
  spec.seqlen_q = 4;
  spec.heads_q = 1;
  spec.head_dim = 8;
  return make_workload(spec);
}

// A failure as a host sees it: the status, and a message that contains `names`.
testing::AssertionResult HostFails(attnrt_status got, const MessageBuffer& message, attnrt_status want,
                                   const std::string& names) {
  if (got != want) {
    return testing::AssertionFailure() << "status " << status_name(got) << ", expected " << status_name(want)
                                       << "; message: " << message.text();
  }
  if (message.empty()) return testing::AssertionFailure() << "no message with status " << status_name(got);
  if (std::string(message.text()).find(names) == std::string::npos) {
    return testing::AssertionFailure() << "message '" << message.text() << "' does not mention '" << names << "'";
  }
  return testing::AssertionSuccess();
}

// The same through the C++ API: fn must throw attnrt::Error with `want` and a message containing `names`.
template <class Fn>
testing::AssertionResult Throws(Fn&& fn, attnrt_status want, const std::string& names) {
  try {
    fn();
  } catch (const Error& e) {
    if (e.status() != want) {
      return testing::AssertionFailure() << "status " << status_name(e.status()) << ", expected " << status_name(want)
                                         << "; message: " << e.what();
    }
    if (std::string(e.what()).find(names) == std::string::npos) {
      return testing::AssertionFailure() << "message '" << e.what() << "' does not mention '" << names << "'";
    }
    return testing::AssertionSuccess();
  }
  return testing::AssertionFailure() << "no attnrt::Error thrown";
}

// The host API's side: a CPU runtime with the embedded default configuration, and a backend
// resolved from `value` (a name or a plugin path) for a small workload.
class StatusHostApi : public testing::Test {
 protected:
  void TearDown() override {
    if (backend_) attnrt_backend_release(backend_);
    if (runtime_) attnrt_runtime_destroy(runtime_);
  }

  void resolve(const std::string& value) {
    const char* overrides[] = {"attnrt.device=cpu"};
    ASSERT_EQ(attnrt_runtime_create(nullptr, overrides, 1, &runtime_, message_.get()), ATTNRT_OK) << message_.text();
    ASSERT_EQ(attnrt_resolve(runtime_, "attn_implementation", value.c_str(), &w_.desc, &backend_, message_.get()),
              ATTNRT_OK)
        << message_.text();
  }
  attnrt_status forward() {
    const attnrt_forward_args a = w_.forward_args();
    return attnrt_backend_forward(backend_, &w_.desc, &a, 1, nullptr, message_.get());
  }
  attnrt_status backward() {
    const attnrt_backward_args b = w_.backward_args();
    return attnrt_backend_backward(backend_, &w_.desc, &b, 1, nullptr, message_.get());
  }

  Workload w_ = small_workload();
  attnrt_runtime* runtime_ = nullptr;
  attnrt_backend_handle* backend_ = nullptr;
  MessageBuffer message_;
};

// The C++ API's side: a Backend over one plugin library.
std::unique_ptr<Backend> backend_of(const std::filesystem::path& library) {
  return std::make_unique<Backend>(PluginLibrary::open(library));
}

// ----------------------------------------------------------------------- INVALID_ARGUMENT

TEST(StatusCpp, ErrorDefaultsToInvalidArgumentAndIsNeverOk) {
  EXPECT_EQ(Error("malformed").status(), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Error(ATTNRT_ERROR_DEVICE, "x").status(), ATTNRT_ERROR_DEVICE);
  EXPECT_EQ(Error(ATTNRT_OK, "x").status(), ATTNRT_ERROR_INTERNAL);
  EXPECT_EQ(Error(static_cast<attnrt_status>(42), "x").status(), ATTNRT_ERROR_INTERNAL);
}

TEST(StatusCpp, InvalidArgumentForABadTensorShape) {
  const std::shared_ptr<Backend> sdpa = test::builtin_backend("sdpa");
  Workload w = small_workload();
  attnrt_forward_args a = w.forward_args();
  DLTensor q = *a.q;
  int64_t wrong[] = {1, 4, 1, 16};  // head_dim 16, the descriptor says 8
  q.shape = wrong;
  a.q = &q;
  EXPECT_TRUE(Throws([&] { sdpa->forward(w.desc, a); }, ATTNRT_ERROR_INVALID_ARGUMENT,
                     "sdpa: forward: q: expected shape [1, 4, 1, 8], got [1, 4, 1, 16]"));
}

TEST(StatusCpp, InvalidArgumentForMissingFilesAndBadOverrides) {
  EXPECT_TRUE(Throws([] { PluginLibrary::open("/nonexistent/libx.so"); }, ATTNRT_ERROR_INVALID_ARGUMENT,
                     "/nonexistent/libx.so: no such file"));
  RuntimeOptions options;
  options.overrides = {"attnrt.no_such_key=1"};
  EXPECT_TRUE(Throws([&] { Runtime r(options); }, ATTNRT_ERROR_INVALID_ARGUMENT, "override 'attnrt.no_such_key=1'"));
}

TEST_F(StatusHostApi, InvalidArgumentForABadTensorShape) {
  resolve("sdpa");
  attnrt_forward_args a = w_.forward_args();
  DLTensor q = *a.q;
  int64_t wrong[] = {1, 4, 1, 16};
  q.shape = wrong;
  a.q = &q;
  EXPECT_TRUE(HostFails(attnrt_backend_forward(backend_, &w_.desc, &a, 1, nullptr, message_.get()), message_,
                        ATTNRT_ERROR_INVALID_ARGUMENT, "q: expected shape [1, 4, 1, 8], got [1, 4, 1, 16]"));
}

TEST_F(StatusHostApi, InvalidArgumentForNullPointersWithAMessage) {
  {
    MessageBuffer m;
    EXPECT_TRUE(HostFails(attnrt_runtime_create(nullptr, nullptr, 0, nullptr, m.get()), m,
                          ATTNRT_ERROR_INVALID_ARGUMENT, "attnrt_runtime_create: runtime must not be NULL"));
  }
  {
    MessageBuffer m;
    const char* overrides[] = {"attnrt.strict=true", nullptr};
    attnrt_runtime* rt = nullptr;
    EXPECT_TRUE(HostFails(attnrt_runtime_create(nullptr, overrides, 2, &rt, m.get()), m, ATTNRT_ERROR_INVALID_ARGUMENT,
                          "attnrt_runtime_create: overrides[1] must not be NULL"));
    EXPECT_EQ(rt, nullptr);
  }
  resolve("sdpa");
  const attnrt_forward_args a = w_.forward_args();
  const attnrt_backward_args b = w_.backward_args();
  struct Case {
    attnrt_status status;
    const char* names;
  };
  MessageBuffer m[6];
  const Case cases[] = {
      {attnrt_backend_forward(nullptr, &w_.desc, &a, 1, nullptr, m[0].get()), "attnrt_backend_forward: backend"},
      {attnrt_backend_forward(backend_, nullptr, &a, 1, nullptr, m[1].get()), "attnrt_backend_forward: desc"},
      {attnrt_backend_forward(backend_, &w_.desc, nullptr, 1, nullptr, m[2].get()), "attnrt_backend_forward: args"},
      {attnrt_backend_backward(nullptr, &w_.desc, &b, 1, nullptr, m[3].get()), "attnrt_backend_backward: backend"},
      {attnrt_backend_backward(backend_, nullptr, &b, 1, nullptr, m[4].get()), "attnrt_backend_backward: desc"},
      {attnrt_backend_backward(backend_, &w_.desc, nullptr, 1, nullptr, m[5].get()), "attnrt_backend_backward: args"},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    EXPECT_TRUE(HostFails(cases[i].status, m[i], ATTNRT_ERROR_INVALID_ARGUMENT,
                          std::string(cases[i].names) + " must not be NULL"));
  }
  // No message buffer at all: still a status, and no crash.
  EXPECT_EQ(attnrt_backend_forward(nullptr, nullptr, nullptr, 0, nullptr, nullptr), ATTNRT_ERROR_INVALID_ARGUMENT);
}

// ----------------------------------------------------------------------- UNSUPPORTED

TEST(StatusCpp, UnsupportedForBackwardWithoutBackward) {
  const std::unique_ptr<Backend> c_reference = backend_of(kCReferenceLib);
  ASSERT_FALSE(c_reference->has_backward());
  Workload w = small_workload();
  const attnrt_backward_args b = w.backward_args();
  EXPECT_TRUE(Throws([&] { c_reference->backward(w.desc, b); }, ATTNRT_ERROR_UNSUPPORTED,
                     "c_reference: the plugin implements no backward"));
}

TEST(StatusCpp, UnsupportedForALibraryThatIsNoUsablePlugin) {
  EXPECT_TRUE(Throws([] { PluginLibrary::open(fixtures() / "broken/libattnrt_abi2.so"); }, ATTNRT_ERROR_UNSUPPORTED,
                     "plugin ABI version 2.3 is incompatible"));
  EXPECT_TRUE(Throws([] { PluginLibrary::open(fixtures() / "broken/libnot_a_library.so"); }, ATTNRT_ERROR_UNSUPPORTED,
                     "not a loadable shared library"));
}

TEST(StatusCpp, UnsupportedFromAPlugin) {
  const std::unique_ptr<Backend> failing = backend_of(kFailingLib);
  Workload w = small_workload();
  w.desc.dropout_seed = ATTNRT_ERROR_UNSUPPORTED;
  const attnrt_forward_args a = w.forward_args();
  EXPECT_TRUE(Throws([&] { failing->forward(w.desc, a); }, ATTNRT_ERROR_UNSUPPORTED,
                     "failing: forward failed (unsupported): forward fails with status 2 on purpose"));
}

TEST_F(StatusHostApi, UnsupportedForAStrictResolutionFailure) {
  const char* strict[] = {"attnrt.device=cpu", "attnrt.strict=true"};
  ASSERT_EQ(attnrt_runtime_create(nullptr, strict, 2, &runtime_, message_.get()), ATTNRT_OK) << message_.text();
  EXPECT_TRUE(HostFails(
      attnrt_resolve(runtime_, "attn_implementation", "flash_attention_3", &w_.desc, &backend_, message_.get()),
      message_, ATTNRT_ERROR_UNSUPPORTED,
      "attn_implementation: strict mode: 'flash_attention_3' cannot be used on cpu"));
  EXPECT_EQ(backend_, nullptr);
}

TEST_F(StatusHostApi, UnsupportedForBackwardWithoutBackward) {
  resolve(kCReferenceDir.string());
  ASSERT_STREQ(attnrt_backend_name(backend_), "c_reference");
  EXPECT_TRUE(
      HostFails(backward(), message_, ATTNRT_ERROR_UNSUPPORTED, "c_reference: the plugin implements no backward"));
}

TEST_F(StatusHostApi, UnsupportedFromAPlugin) {
  resolve(kFailingDir.string());
  w_.desc.dropout_seed = ATTNRT_ERROR_UNSUPPORTED;
  EXPECT_TRUE(HostFails(forward(), message_, ATTNRT_ERROR_UNSUPPORTED,
                        "failing: forward failed (unsupported): forward fails with status 2 on purpose"));
}

// ----------------------------------------------------------------------- DEVICE

TEST(StatusCpp, DeviceFromAPlugin) {
  const std::unique_ptr<Backend> failing = backend_of(kFailingLib);
  Workload w = small_workload();
  w.desc.dropout_seed = ATTNRT_ERROR_DEVICE;
  const attnrt_forward_args a = w.forward_args();
  EXPECT_TRUE(Throws([&] { failing->forward(w.desc, a); }, ATTNRT_ERROR_DEVICE,
                     "failing: forward failed (device error): forward fails with status 3 on purpose"));
  w.desc.dropout_seed = 0;  // the fixture's own backward failure
  const attnrt_backward_args b = w.backward_args();
  EXPECT_TRUE(Throws([&] { failing->backward(w.desc, b); }, ATTNRT_ERROR_DEVICE,
                     "failing: backward failed (device error): device lost on purpose"));
}

TEST(StatusCpp, DeviceForADeviceThatIsNotHere) {
  EXPECT_TRUE(Throws([] { select_device("cuda:999", probe_devices()); }, ATTNRT_ERROR_DEVICE,
                     "device 'cuda:999' requested but"));
}

TEST(StatusCpp, CudaAllocationIsDeviceWithoutCudaAndOutOfMemoryWithIt) {
  // Without a usable CUDA driver the allocation cannot even start (DEVICE); with one, 4 EiB is
  // more than any GPU has (CUDA_ERROR_OUT_OF_MEMORY).
  const bool have_cuda = !probe_devices().cuda.empty();
  EXPECT_TRUE(Throws(
      [] {
        CudaBuffer buffer(DLDevice{kDLCUDA, 0}, kHugeBytes);
      },
      have_cuda ? ATTNRT_ERROR_OUT_OF_MEMORY : ATTNRT_ERROR_DEVICE, have_cuda ? "CUDA error 2" : "CUDA"));
}

TEST_F(StatusHostApi, DeviceFromAPlugin) {
  resolve(kFailingDir.string());
  w_.desc.dropout_seed = ATTNRT_ERROR_DEVICE;
  EXPECT_TRUE(HostFails(forward(), message_, ATTNRT_ERROR_DEVICE,
                        "failing: forward failed (device error): forward fails with status 3 on purpose"));
  EXPECT_TRUE(HostFails(backward(), message_, ATTNRT_ERROR_DEVICE,
                        "failing: backward failed (device error): backward fails with status 3 on purpose"));
}

TEST_F(StatusHostApi, DeviceForAConfiguredDeviceThatIsNotHere) {
  const char* overrides[] = {"attnrt.device=cuda:999"};
  EXPECT_TRUE(HostFails(attnrt_runtime_create(nullptr, overrides, 1, &runtime_, message_.get()), message_,
                        ATTNRT_ERROR_DEVICE, "device 'cuda:999' requested but"));
  EXPECT_EQ(runtime_, nullptr);
}

// ----------------------------------------------------------------------- OUT_OF_MEMORY

TEST(StatusCpp, OutOfMemoryFromAPluginAndForTheHostWorkspace) {
  const std::unique_ptr<Backend> failing = backend_of(kFailingLib);
  Workload w = small_workload();
  w.desc.dropout_seed = ATTNRT_ERROR_OUT_OF_MEMORY;
  const attnrt_forward_args a = w.forward_args();
  EXPECT_TRUE(Throws([&] { failing->forward(w.desc, a); }, ATTNRT_ERROR_OUT_OF_MEMORY,
                     "failing: forward failed (out of memory): forward fails with status 4 on purpose"));
  // The workspace the fixture asks for (desc.dropout_offset), which it checks it was given: the
  // call gets as far as the plugin's own failure (INTERNAL) only when the host provided it.
  w.desc.dropout_seed = 0;
  w.desc.dropout_offset = 1024;
  EXPECT_TRUE(Throws([&] { failing->forward(w.desc, a); }, ATTNRT_ERROR_INTERNAL, "kernel exploded on purpose"));
  w.desc.dropout_offset = kHugeBytes;
  EXPECT_TRUE(Throws([&] { failing->forward(w.desc, a); }, ATTNRT_ERROR_OUT_OF_MEMORY,
                     "failing: cannot allocate 4611686018427387904 bytes of workspace"));
  // The failed allocation left no stale capacity behind: a smaller request gets real memory.
  w.desc.dropout_offset = 512;
  EXPECT_TRUE(Throws([&] { failing->forward(w.desc, a); }, ATTNRT_ERROR_INTERNAL, "kernel exploded on purpose"));
  // A size whose rounding to 256-byte blocks would wrap around is refused, never a tiny buffer.
  w.desc.dropout_offset = SIZE_MAX - 10;
  EXPECT_TRUE(Throws([&] { failing->forward(w.desc, a); }, ATTNRT_ERROR_OUT_OF_MEMORY,
                     "failing: workspace of 18446744073709551605 bytes cannot be allocated"));
}

TEST_F(StatusHostApi, OutOfMemoryFromAPluginAndForTheHostWorkspace) {
  resolve(kFailingDir.string());
  w_.desc.dropout_seed = ATTNRT_ERROR_OUT_OF_MEMORY;
  EXPECT_TRUE(HostFails(forward(), message_, ATTNRT_ERROR_OUT_OF_MEMORY,
                        "failing: forward failed (out of memory): forward fails with status 4 on purpose"));
  w_.desc.dropout_seed = 0;
  w_.desc.dropout_offset = kHugeBytes;
  EXPECT_TRUE(HostFails(backward(), message_, ATTNRT_ERROR_OUT_OF_MEMORY,
                        "failing: cannot allocate 4611686018427387904 bytes of workspace"));
}

// ----------------------------------------------------------------------- INTERNAL

TEST(StatusCpp, InternalFromAPlugin) {
  const std::unique_ptr<Backend> failing = backend_of(kFailingLib);
  Workload w = small_workload();
  const attnrt_forward_args a = w.forward_args();
  // A plain std::exception inside the plugin (the SDK's guard makes it INTERNAL)...
  EXPECT_TRUE(Throws([&] { failing->forward(w.desc, a); }, ATTNRT_ERROR_INTERNAL,
                     "failing: forward failed (internal error): kernel exploded on purpose"));
  // ...and an explicit one.
  w.desc.dropout_seed = ATTNRT_ERROR_INTERNAL;
  EXPECT_TRUE(Throws([&] { failing->forward(w.desc, a); }, ATTNRT_ERROR_INTERNAL,
                     "failing: forward failed (internal error): forward fails with status 5 on purpose"));
}

TEST_F(StatusHostApi, InternalFromAPlugin) {
  resolve(kFailingDir.string());
  EXPECT_TRUE(HostFails(forward(), message_, ATTNRT_ERROR_INTERNAL,
                        "failing: forward failed (internal error): kernel exploded on purpose"));
  w_.desc.dropout_seed = ATTNRT_ERROR_INTERNAL;
  EXPECT_TRUE(HostFails(backward(), message_, ATTNRT_ERROR_INTERNAL,
                        "failing: backward failed (internal error): backward fails with status 5 on purpose"));
}

}  // namespace
}  // namespace attnrt
