#include "log.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>

namespace attnrt {
namespace {

// The environment's request (ATTNRT_LOG_LEVEL), read once: a library user who did not install a
// callback can still see what the library says without changing their program.
LogCallback callback_from_environment(LogLevel* min_level) {
  *min_level = LogLevel::kOff;
  const char* env = std::getenv("ATTNRT_LOG_LEVEL");
  if (!env || !*env) return nullptr;
  const std::optional<LogLevel> level = parse_log_level(env);
  if (!level) {
    std::fprintf(stderr, "attnrt: WARNING: ATTNRT_LOG_LEVEL='%s' is not debug, info, warn, error or off; ignored\n",
                 env);
    return nullptr;
  }
  *min_level = *level;
  return [](LogLevel l, std::string_view message) {
    std::fprintf(stderr, "attnrt: %s: %.*s\n", log_level_name(l), static_cast<int>(message.size()), message.data());
  };
}

// Deliveries hold the lock shared, so they run concurrently, and set_log_callback (exclusive)
// returns only when no delivery to the old callback is running: its user data may go then.
struct State {
  std::shared_mutex mutex;
  LogCallback callback;
  std::atomic<int> min_level{static_cast<int>(LogLevel::kOff)};

  State() {
    LogLevel level;
    callback = callback_from_environment(&level);
    min_level.store(static_cast<int>(level), std::memory_order_relaxed);
  }
};

State& state() {
  static State s;
  return s;
}

}  // namespace

void set_log_callback(LogCallback callback, LogLevel min_level) {
  State& s = state();
  if (min_level == LogLevel::kOff) callback = nullptr;
  std::unique_lock<std::shared_mutex> lock(s.mutex);
  s.callback = std::move(callback);
  s.min_level.store(static_cast<int>(s.callback ? min_level : LogLevel::kOff), std::memory_order_relaxed);
}

std::optional<LogLevel> parse_log_level(std::string_view text) {
  if (text == "debug") return LogLevel::kDebug;
  if (text == "info") return LogLevel::kInfo;
  if (text == "warn" || text == "warning") return LogLevel::kWarn;
  if (text == "error") return LogLevel::kError;
  if (text == "off") return LogLevel::kOff;
  return std::nullopt;
}

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarn: return "WARNING";
    case LogLevel::kError: return "ERROR";
    case LogLevel::kOff: break;
  }
  return "OFF";
}

namespace log {

bool enabled(LogLevel level) { return static_cast<int>(level) >= state().min_level.load(std::memory_order_relaxed); }

void emit(LogLevel level, const std::string& message) {
  State& s = state();
  std::shared_lock<std::shared_mutex> lock(s.mutex);
  if (static_cast<int>(level) >= s.min_level.load(std::memory_order_relaxed) && s.callback) s.callback(level, message);
}

}  // namespace log
}  // namespace attnrt
