// libattnrt is quiet by default (issue 19): what resolution says goes to the host's log callback
// (log.hpp, host_api.h's attnrt_set_log_callback) or, when the environment asks for it with
// ATTNRT_LOG_LEVEL, to stderr; never to stderr on its own.
#include <attnrt/host_api.h>
#include <attnrt/runtime/log.hpp>
#include <attnrt/runtime/resolver.hpp>
#include <attnrt/runtime/runtime.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "test_support.hpp"

namespace attnrt {
namespace {

attnrt_attention_desc small_desc() {
  attnrt_attention_desc d{};
  d.struct_size = sizeof d;
  d.dtype = ATTNRT_DTYPE_FP32;
  d.head_dim = d.head_dim_v = 64;
  d.heads_q = d.heads_kv = 4;
  d.batch = 1;
  d.seqlen_q = d.seqlen_k = 16;
  d.softmax_scale = 0.125f;
  d.window_left = d.window_right = -1;
  return d;
}

// flash_attention_2 asked for on the CPU: refused (a CUDA plugin, or none installed), so the
// resolution warns with the reason and falls back to sdpa or eager, saying which.
Resolution resolve_with_fallback() {
  Settings s;
  s.fallback["cpu"] = {"sdpa", "eager"};
  const Deprecations d =
      Deprecations::from_yaml(YAML::Load(std::string(embedded_config("deprecations.yaml"))), "d.yaml");
  Registry registry({test::plugins_dir()});
  Resolver r(registry, s, d, {}, probe_devices().cpu);
  return r.resolve("attn_implementation", "flash_attention_2", small_desc());
}

struct Message {
  LogLevel level;
  std::string text;
};

// Installs a callback collecting messages for one test; removes it at the end.
class Collector {
 public:
  explicit Collector(LogLevel min_level) {
    set_log_callback(
        [this](LogLevel l, std::string_view m) {
          std::lock_guard<std::mutex> lock(mutex_);
          messages_.push_back({l, std::string(m)});
        },
        min_level);
  }
  ~Collector() { set_log_callback(nullptr, LogLevel::kOff); }
  std::vector<Message> messages() {
    std::lock_guard<std::mutex> lock(mutex_);
    return messages_;
  }

 private:
  std::mutex mutex_;
  std::vector<Message> messages_;
};

bool has(const std::vector<Message>& ms, LogLevel level, const std::string& part) {
  for (const Message& m : ms)
    if (m.level == level && m.text.find(part) != std::string::npos) return true;
  return false;
}

TEST(Log, LibraryPrintsNothingWithoutACallback) {
  ASSERT_EQ(std::getenv("ATTNRT_LOG_LEVEL"), nullptr) << "this test checks the default";
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  const Resolution r = resolve_with_fallback();
  const std::string out = testing::internal::GetCapturedStdout();
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(r.fell_back);
  EXPECT_EQ(err, "");
  EXPECT_EQ(out, "");
}

TEST(Log, CallbackHearsTheFallbackReasonAndTheChoice) {
  Collector c(LogLevel::kDebug);
  const Resolution r = resolve_with_fallback();
  ASSERT_TRUE(r.ok()) << r.error;
  const std::vector<Message> ms = c.messages();
  EXPECT_TRUE(has(ms, LogLevel::kWarn, "attn_implementation: flash_attention_2 requested but not usable on cpu: "))
      << ms.size() << " messages";
  EXPECT_TRUE(has(ms, LogLevel::kWarn, "Falling back to '"));
  EXPECT_TRUE(has(ms, LogLevel::kInfo, "attn_implementation: attention backend: " + r.chosen));
}

TEST(Log, MinimumLevelFiltersAndRemovingTheCallbackSilences) {
  {
    Collector c(LogLevel::kWarn);
    resolve_with_fallback();
    const std::vector<Message> ms = c.messages();
    EXPECT_TRUE(has(ms, LogLevel::kWarn, "requested but not usable"));
    for (const Message& m : ms) EXPECT_GE(static_cast<int>(m.level), static_cast<int>(LogLevel::kWarn)) << m.text;
  }
  testing::internal::CaptureStderr();
  resolve_with_fallback();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

// The C host API's callback: level values and user data reach it; NULL removes it.
TEST(Log, HostApiCallback) {
  struct Seen {
    int warnings = 0;
    int infos = 0;
  } seen;
  ASSERT_EQ(attnrt_set_log_callback(
                [](void* user, attnrt_log_level level, const char* message) {
                  auto* s = static_cast<Seen*>(user);
                  if (level == ATTNRT_LOG_WARNING && std::string(message).find("not usable") != std::string::npos)
                    ++s->warnings;
                  if (level == ATTNRT_LOG_INFO) ++s->infos;
                },
                &seen, ATTNRT_LOG_INFO),
            ATTNRT_OK);
  resolve_with_fallback();
  EXPECT_GE(seen.warnings, 1);
  EXPECT_GE(seen.infos, 1);
  ASSERT_EQ(attnrt_set_log_callback(nullptr, nullptr, ATTNRT_LOG_INFO), ATTNRT_OK);
  const Seen before = seen;
  resolve_with_fallback();
  EXPECT_EQ(seen.warnings, before.warnings);
  EXPECT_EQ(seen.infos, before.infos);
  EXPECT_EQ(attnrt_set_log_callback(nullptr, nullptr, static_cast<attnrt_log_level>(7)), ATTNRT_ERROR_INVALID_ARGUMENT);
}

// ATTNRT_LOG_LEVEL is how a user of a program that installs no callback asks to see messages. It
// is read once per process, so the check runs in a child process of its own.
TEST(Log, EnvironmentAsksForStderr) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("ATTNRT_LOG_LEVEL", "info", 1);
        const Resolution r = resolve_with_fallback();
        std::exit(r.ok() ? 0 : 3);
      },
      testing::ExitedWithCode(0),
      "attnrt: WARNING: attn_implementation: flash_attention_2 requested but not usable on cpu: (.|\n)*"
      "attnrt: INFO: attn_implementation: attention backend: ");
  EXPECT_EXIT(
      {
        setenv("ATTNRT_LOG_LEVEL", "loud", 1);
        resolve_with_fallback();
        std::exit(0);
      },
      testing::ExitedWithCode(0), "ATTNRT_LOG_LEVEL='loud' is not debug, info, warn, error or off; ignored");
}

TEST(Log, LevelNames) {
  EXPECT_EQ(parse_log_level("warning"), LogLevel::kWarn);
  EXPECT_EQ(parse_log_level("warn"), LogLevel::kWarn);
  EXPECT_EQ(parse_log_level("debug"), LogLevel::kDebug);
  EXPECT_EQ(parse_log_level("loud"), std::nullopt);
  EXPECT_STREQ(log_level_name(LogLevel::kError), "ERROR");
}

}  // namespace
}  // namespace attnrt
