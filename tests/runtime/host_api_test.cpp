// The C host API: embedded default, resolution, a checked forward call, errors as statuses.
#include "test_support.hpp"

#include <attnrt/host_api.h>
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/workload.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

struct Msg {
  char text[4096] = {0};
  attnrt_message m{sizeof(attnrt_message), text, sizeof text};
};

TEST(HostApi, EmbeddedDefaultResolvesAndRuns) {
  attnrt_runtime* rt = nullptr;
  Msg err;
  ASSERT_EQ(attnrt_runtime_create(nullptr, nullptr, 0, &rt, &err.m), ATTNRT_OK) << err.text;
  ASSERT_EQ(attnrt_runtime_site_count(rt), 1u);
  EXPECT_STREQ(attnrt_runtime_site_name(rt, 0), "attn_implementation");
  EXPECT_STREQ(attnrt_runtime_site_value(rt, 0), "auto");
  EXPECT_EQ(attnrt_runtime_site_name(rt, 5), nullptr);

  attnrt::WorkloadSpec spec;
  spec.batch = 2;
  spec.seqlen_q = 33;
  spec.heads_q = 4;
  spec.heads_kv = 2;
  spec.head_dim = 32;
  spec.causal = true;
  attnrt::Workload w = attnrt::make_workload(spec);
  attnrt_backend_handle* backend = nullptr;
  ASSERT_EQ(attnrt_resolve(rt, "attn_implementation", nullptr, &w.desc, &backend, &err.m), ATTNRT_OK) << err.text;
  EXPECT_STREQ(attnrt_backend_name(backend), "sdpa");
  attnrt_forward_args a = w.forward_args();
  ASSERT_EQ(attnrt_backend_forward(backend, &w.desc, &a, 1, nullptr, &err.m), ATTNRT_OK) << err.text;
  const attnrt::ReferenceForward ref = attnrt::reference_forward(w.desc, a);
  EXPECT_LT(attnrt::max_abs_error(*w.out.dl(), ref.out), 1e-5);

  // A bad call is a status and a message naming the tensor, not a crash.
  attnrt_forward_args bad = a;
  bad.k = nullptr;
  EXPECT_EQ(attnrt_backend_forward(backend, &w.desc, &bad, 1, nullptr, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.text).find("k: required tensor is NULL"), std::string::npos) << err.text;

  attnrt_backend_release(backend);
  attnrt_runtime_destroy(rt);
}

TEST(HostApi, ErrorsAreStatusesWithMessages) {
  attnrt_runtime* rt = nullptr;
  Msg err;
  const char* overrides[] = {"+attn_implementation=eager"};
  EXPECT_EQ(attnrt_runtime_create(nullptr, overrides, 1, &rt, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(rt, nullptr);
  EXPECT_NE(std::string(err.text).find("override '+attn_implementation=eager'"), std::string::npos) << err.text;

  const char* strict[] = {"attnrt.strict=true", "attn_implementation=flash_attention_3"};
  ASSERT_EQ(attnrt_runtime_create(nullptr, strict, 2, &rt, &err.m), ATTNRT_OK) << err.text;
  attnrt::WorkloadSpec spec;
  attnrt::Workload w = attnrt::make_workload(spec);
  attnrt_backend_handle* backend = nullptr;
  EXPECT_EQ(attnrt_resolve(rt, "attn_implementation", nullptr, &w.desc, &backend, &err.m), ATTNRT_ERROR_UNSUPPORTED);
  EXPECT_NE(
      std::string(err.text).find("flash_attention_3: " + attnrt::test::cuda_plugin_reason_on_cpu("flash_attention_3")),
      std::string::npos)
      << err.text;
  EXPECT_EQ(attnrt_resolve(rt, "no_such_site", nullptr, &w.desc, &backend, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  attnrt_runtime_destroy(rt);
}

}  // namespace
