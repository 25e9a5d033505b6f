// attnrt.context_parallel (settings.hpp, issue 20): a good value read and applied to the sites it
// names, every bad value refused with its file:line:column, and the setting reaching a C host
// through the resolved backend (attnrt_backend_context_parallel).
#include "test_support.hpp"

#include <attnrt/host_api.h>
#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/settings.hpp>

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

namespace attnrt {
namespace {

// The message read_settings throws for `yaml` ("" when it reads).
std::string error_of(const std::string& yaml) {
  try {
    std::vector<std::string> warnings;
    read_settings(Config::from_string(yaml, "cp.yaml"), &warnings);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ContextParallelSetting, GoodValueAppliesToTheSitesItNames) {
  std::vector<std::string> warnings;
  const Settings s = read_settings(Config::from_string("attnrt:\n"
                                                       "  context_parallel:\n"
                                                       "    size: 4\n"
                                                       "    layout: contiguous\n"
                                                       "    sites: [actor.model]\n",
                                                       "cp.yaml"),
                                   &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(s.context_parallel.size, 4);
  EXPECT_EQ(s.context_parallel.layout, "contiguous");
  EXPECT_EQ(s.context_parallel.where, "cp.yaml:2:3");
  EXPECT_EQ(s.context_parallel_for("actor.model").size, 4);
  EXPECT_FALSE(s.context_parallel_for("critic.model").enabled());

  const Settings all =
      read_settings(Config::from_string("attnrt:\n  context_parallel: {size: 2}\n", "cp.yaml"), &warnings);
  EXPECT_EQ(all.context_parallel_for("any.site").size, 2);
  EXPECT_EQ(all.context_parallel_for("any.site").layout, "zigzag");  // the default: causal work balanced
  EXPECT_FALSE(read_settings(Config::from_string("attnrt:\n  strict: true\n", "cp.yaml"), &warnings)
                   .context_parallel_for("x")
                   .enabled());
}

TEST(ContextParallelSetting, BadValuesNameTheirPosition) {
  EXPECT_NE(error_of("attnrt:\n  context_parallel:\n    size: 2\n    layout: ring\n")
                .find("cp.yaml:4:5: attnrt.context_parallel.layout 'ring' is not zigzag or contiguous"),
            std::string::npos)
      << error_of("attnrt:\n  context_parallel:\n    size: 2\n    layout: ring\n");
  EXPECT_NE(error_of("attnrt:\n  context_parallel:\n    size: 0\n")
                .find("cp.yaml:3:5: attnrt.context_parallel.size must be between 1 and 65536, got 0"),
            std::string::npos);
  EXPECT_NE(error_of("attnrt:\n  context_parallel:\n    size: two\n")
                .find("cp.yaml:3:5: attnrt.context_parallel.size must be a whole number of ranks, got 'two'"),
            std::string::npos);
  EXPECT_NE(error_of("attnrt:\n  context_parallel: 4\n")
                .find("cp.yaml:2:3: 'attnrt.context_parallel' must be a mapping such as {size: 2, layout: zigzag}"),
            std::string::npos)
      << error_of("attnrt:\n  context_parallel: 4\n");
  EXPECT_NE(error_of("attnrt:\n  context_parallel:\n    layout: zigzag\n")
                .find("cp.yaml:2:3: attnrt.context_parallel needs a size (the number of ranks)"),
            std::string::npos);
  EXPECT_NE(error_of("attnrt:\n  context_parallel:\n    size: 2\n    sites: actor\n")
                .find("cp.yaml:4:5: attnrt.context_parallel.sites must be a list of attention site names"),
            std::string::npos);
}

// An unknown key is an error, not the warning an unknown setting gets: `sizee: 4` ignored would
// leave a job on one rank while its host expects a ring.
TEST(ContextParallelSetting, UnknownKeyIsAnErrorWithDidYouMean) {
  const std::string e = error_of("attnrt:\n  context_parallel:\n    size: 2\n    layuot: zigzag\n");
  EXPECT_NE(e.find("cp.yaml:4:5: unknown key 'attnrt.context_parallel.layuot'; did you mean 'layout'? "
                   "(attnrt.context_parallel takes size, layout and sites)"),
            std::string::npos)
      << e;
}

struct Msg {
  char text[4096] = {0};
  attnrt_message m{sizeof(attnrt_message), text, sizeof text};
};

// From a config file to a C host: the resolved backend of a named site carries the ring's size and
// layout, another site none; a site name that is no site of the file is refused at load with the
// setting's position and the closest site.
TEST(ContextParallelSetting, ReachesTheHostThroughTheResolvedBackend) {
  test::TempDir dir;
  const auto file = dir.write("cp.yaml",
                              "actor:\n"
                              "  model:\n"
                              "    attn_implementation: eager\n"
                              "critic:\n"
                              "  model:\n"
                              "    attn_implementation: eager\n"
                              "attnrt:\n"
                              "  device: cpu\n"
                              "  context_parallel: {size: 3, layout: contiguous, sites: [actor.model]}\n");
  attnrt_runtime* rt = nullptr;
  Msg err;
  ASSERT_EQ(attnrt_runtime_create(file.c_str(), nullptr, 0, &rt, &err.m), ATTNRT_OK) << err.text;
  attnrt_attention_desc desc{};
  desc.struct_size = sizeof desc;
  desc.dtype = ATTNRT_DTYPE_FP32;
  desc.batch = 1, desc.seqlen_q = 12, desc.seqlen_k = 12, desc.heads_q = 2, desc.heads_kv = 2;
  desc.head_dim = 16, desc.head_dim_v = 16, desc.window_left = -1, desc.window_right = -1;
  desc.softmax_scale = 0.25f;
  for (const auto& [site, size, layout] :
       {std::tuple{"actor.model", 3, ATTNRT_RING_CONTIGUOUS}, std::tuple{"critic.model", 1, ATTNRT_RING_ZIGZAG}}) {
    attnrt_backend_handle* backend = nullptr;
    ASSERT_EQ(attnrt_resolve(rt, site, nullptr, &desc, &backend, &err.m), ATTNRT_OK) << err.text;
    int32_t got_size = 0;
    attnrt_ring_layout got_layout = ATTNRT_RING_ZIGZAG;
    ASSERT_EQ(attnrt_backend_context_parallel(backend, &got_size, &got_layout, &err.m), ATTNRT_OK) << err.text;
    EXPECT_EQ(got_size, size) << site;
    EXPECT_EQ(got_layout, layout) << site;
    attnrt_backend_release(backend);
  }
  attnrt_runtime_destroy(rt);

  // An override changes it as any other key.
  const char* overrides[] = {"attnrt.context_parallel.size=2"};
  ASSERT_EQ(attnrt_runtime_create(file.c_str(), overrides, 1, &rt, &err.m), ATTNRT_OK) << err.text;
  attnrt_backend_handle* backend = nullptr;
  ASSERT_EQ(attnrt_resolve(rt, "actor.model", nullptr, &desc, &backend, &err.m), ATTNRT_OK) << err.text;
  int32_t got_size = 0;
  attnrt_ring_layout got_layout = ATTNRT_RING_ZIGZAG;
  ASSERT_EQ(attnrt_backend_context_parallel(backend, &got_size, &got_layout, &err.m), ATTNRT_OK) << err.text;
  EXPECT_EQ(got_size, 2);
  EXPECT_EQ(attnrt_backend_context_parallel(backend, nullptr, &got_layout, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.text).find("attnrt_backend_context_parallel: size must not be NULL"), std::string::npos);
  attnrt_backend_release(backend);
  attnrt_runtime_destroy(rt);

  const auto typo = dir.write("typo.yaml",
                              "actor:\n  model:\n    attn_implementation: eager\nattnrt:\n"
                              "  context_parallel: {size: 2, sites: [actor.modle]}\n");
  EXPECT_EQ(attnrt_runtime_create(typo.c_str(), nullptr, 0, &rt, &err.m), ATTNRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(
      std::string(err.text).find(typo.string() + ":5:3: attnrt.context_parallel.sites names 'actor.modle', which is no "
                                                 "attention site of the configuration; did you mean 'actor.model'? "
                                                 "(sites: actor.model)"),
      std::string::npos)
      << err.text;
}

}  // namespace
}  // namespace attnrt
