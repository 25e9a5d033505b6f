// The host API's caller-owned workspace (issue 18): the size query, forward and backward with the
// caller's attnrt_exec, and the errors that name what is wrong with it.
#include <attnrt/host_api.h>
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/workload.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace {

struct Msg {
  char text[4096] = {0};
  attnrt_message m{sizeof(attnrt_message), text, sizeof text};
};

struct Free {
  void operator()(void* p) const { std::free(p); }
};

// A block of at least `bytes`, aligned to 256 (one byte more than asked, so that data() + 1 is a
// misaligned pointer with as much room).
std::unique_ptr<char, Free> aligned_block(size_t bytes) {
  return std::unique_ptr<char, Free>(static_cast<char*>(std::aligned_alloc(256, (bytes + 256) / 256 * 256 + 256)));
}

class CallerWorkspace : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_EQ(attnrt_runtime_create(nullptr, nullptr, 0, &rt_, &err_.m), ATTNRT_OK) << err_.text;
    attnrt::WorkloadSpec spec;
    spec.batch = 2;
    spec.seqlen_q = 37;
    spec.heads_q = 4;
    spec.heads_kv = 2;
    spec.head_dim = 32;
    spec.causal = true;
    spec.sinks = true;
    w_ = attnrt::make_workload(spec);
    ASSERT_EQ(attnrt_resolve(rt_, "attn_implementation", GetParam(), &w_.desc, &backend_, &err_.m), ATTNRT_OK)
        << err_.text;
    ASSERT_STREQ(attnrt_backend_name(backend_), GetParam());
  }
  void TearDown() override {
    attnrt_backend_release(backend_);
    attnrt_runtime_destroy(rt_);
  }

  attnrt_runtime* rt_ = nullptr;
  attnrt_backend_handle* backend_ = nullptr;
  attnrt::Workload w_;
  Msg err_;
};

TEST_P(CallerWorkspace, ForwardAndBackwardMatchTheReference) {
  for (int32_t threads : {1, 2}) {
    size_t fwd_bytes = 1, bwd_bytes = 1;
    ASSERT_EQ(attnrt_backend_workspace_size(backend_, &w_.desc, 0, threads, &fwd_bytes, &err_.m), ATTNRT_OK)
        << err_.text;
    ASSERT_EQ(attnrt_backend_workspace_size(backend_, &w_.desc, 1, threads, &bwd_bytes, &err_.m), ATTNRT_OK)
        << err_.text;
    auto fwd_ws = aligned_block(fwd_bytes);
    auto bwd_ws = aligned_block(bwd_bytes);

    attnrt_forward_args a = w_.forward_args();
    const attnrt_exec fwd{sizeof(attnrt_exec), nullptr, fwd_ws.get(), fwd_bytes, threads};
    ASSERT_EQ(attnrt_backend_forward_with_workspace(backend_, &w_.desc, &a, &fwd, &err_.m), ATTNRT_OK) << err_.text;
    const attnrt::ReferenceForward ref = attnrt::reference_forward(w_.desc, a);
    EXPECT_LT(attnrt::max_abs_error(*w_.out.dl(), ref.out), 1e-5);
    EXPECT_LT(attnrt::max_abs_error(*w_.lse.dl(), ref.lse), 1e-4);

    attnrt_backward_args b = w_.backward_args();
    const attnrt_exec bwd{sizeof(attnrt_exec), nullptr, bwd_ws.get(), bwd_bytes, threads};
    ASSERT_EQ(attnrt_backend_backward_with_workspace(backend_, &w_.desc, &b, &bwd, &err_.m), ATTNRT_OK) << err_.text;
    const attnrt::ReferenceBackward rb = attnrt::reference_backward(w_.desc, a, *w_.dout.dl());
    EXPECT_LT(attnrt::max_abs_error(*w_.dq.dl(), rb.dq), 1e-4);
    EXPECT_LT(attnrt::max_abs_error(*w_.dk.dl(), rb.dk), 1e-4);
    EXPECT_LT(attnrt::max_abs_error(*w_.dv.dl(), rb.dv), 1e-4);
    EXPECT_LT(attnrt::max_abs_error(*w_.dsinks.dl(), rb.dsinks), 1e-4);
  }
}

TEST_P(CallerWorkspace, AWrongExecIsAnInvalidArgumentNamingItsField) {
  size_t bytes = 0;
  ASSERT_EQ(attnrt_backend_workspace_size(backend_, &w_.desc, 0, 1, &bytes, &err_.m), ATTNRT_OK) << err_.text;
  auto ws = aligned_block(bytes);
  attnrt_forward_args a = w_.forward_args();

  EXPECT_EQ(attnrt_backend_forward_with_workspace(backend_, &w_.desc, &a, nullptr, &err_.m),
            ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err_.text).find("exec must not be NULL"), std::string::npos) << err_.text;

  attnrt_exec old{0, nullptr, ws.get(), bytes, 1};
  EXPECT_EQ(attnrt_backend_forward_with_workspace(backend_, &w_.desc, &a, &old, &err_.m),
            ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err_.text).find("exec.struct_size"), std::string::npos) << err_.text;

  if (bytes > 0) {
    attnrt_exec small{sizeof(attnrt_exec), nullptr, ws.get(), bytes - 1, 1};
    EXPECT_EQ(attnrt_backend_forward_with_workspace(backend_, &w_.desc, &a, &small, &err_.m),
              ATTNRT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(err_.text).find("exec.workspace_size"), std::string::npos) << err_.text;
    attnrt_exec null_ws{sizeof(attnrt_exec), nullptr, nullptr, bytes, 1};
    EXPECT_EQ(attnrt_backend_forward_with_workspace(backend_, &w_.desc, &a, &null_ws, &err_.m),
              ATTNRT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(err_.text).find("workspace NULL"), std::string::npos) << err_.text;
  }
  attnrt_exec misaligned{sizeof(attnrt_exec), nullptr, ws.get() + 1, bytes + 1, 1};
  if (bytes > 0) {
    EXPECT_EQ(attnrt_backend_forward_with_workspace(backend_, &w_.desc, &a, &misaligned, &err_.m),
              ATTNRT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(err_.text).find("not aligned to 256 bytes"), std::string::npos) << err_.text;
  }

  // Tensors are still checked, by name.
  attnrt_forward_args bad = a;
  bad.v = nullptr;
  attnrt_exec ok{sizeof(attnrt_exec), nullptr, ws.get(), bytes, 1};
  EXPECT_EQ(attnrt_backend_forward_with_workspace(backend_, &w_.desc, &bad, &ok, &err_.m),
            ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err_.text).find("v: required tensor is NULL"), std::string::npos) << err_.text;

  EXPECT_EQ(attnrt_backend_workspace_size(backend_, &w_.desc, 0, 1, nullptr, &err_.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err_.text).find("bytes must not be NULL"), std::string::npos) << err_.text;
}

INSTANTIATE_TEST_SUITE_P(CpuPlugins, CallerWorkspace, ::testing::Values("eager", "sdpa"));

TEST(HostApiStatus, StringsNameEveryStatus) {
  EXPECT_STREQ(attnrt_status_string(ATTNRT_OK), "ok");
  EXPECT_STREQ(attnrt_status_string(ATTNRT_ERROR_INVALID_ARGUMENT), "invalid argument");
  EXPECT_STREQ(attnrt_status_string(ATTNRT_ERROR_UNSUPPORTED), "unsupported");
  EXPECT_STREQ(attnrt_status_string(ATTNRT_ERROR_DEVICE), "device error");
  EXPECT_STREQ(attnrt_status_string(ATTNRT_ERROR_OUT_OF_MEMORY), "out of memory");
  EXPECT_STREQ(attnrt_status_string(ATTNRT_ERROR_INTERNAL), "internal error");
  EXPECT_STREQ(attnrt_status_string(static_cast<attnrt_status>(77)), "unknown status");
}

}  // namespace
