// The library's side of log.hpp: format and deliver a message when someone listens. The level
// check is one relaxed atomic load, so a message nobody listens to costs no formatting.
#pragma once

#include <attnrt/runtime/log.hpp>

#include <fmt/format.h>

#include <string>
#include <utility>

namespace attnrt::log {

bool enabled(LogLevel level);
void emit(LogLevel level, const std::string& message);

template <typename... Args>
void at(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(level)) emit(level, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
  at(LogLevel::kDebug, format, std::forward<Args>(args)...);
}
template <typename... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  at(LogLevel::kInfo, format, std::forward<Args>(args)...);
}
template <typename... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  at(LogLevel::kWarn, format, std::forward<Args>(args)...);
}

}  // namespace attnrt::log
