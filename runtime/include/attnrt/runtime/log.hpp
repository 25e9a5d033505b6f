// Where libattnrt's messages go. The library prints nothing by itself: what it has to say (each
// resolution's choice and fallback reasons, plugin folders passed over, configuration warnings,
// what plugins log through attnrt_host_info.log under their name)
// goes to the host's log callback, and without one it is dropped, unless the environment asks
// for it with ATTNRT_LOG_LEVEL=debug|info|warn|error (then it is written to stderr as
// "attnrt: WARNING: ..."). The CLI installs a callback that prints through its own logger; the
// Python package routes messages to the standard `logging` module (logger "attnrt").
//
// The callback is process-wide, as cuDNN's and NCCL's are: messages name their site, so one
// callback serves every Runtime. It may be called from any thread that resolves or creates a
// Runtime, and from a plugin's calls if the plugin logs, concurrently, so it must be thread-safe.
// attnrt's own code never logs on the per-call path (forward, backward).
#pragma once

#include <attnrt/runtime/export.hpp>

#include <functional>
#include <optional>
#include <string_view>

namespace attnrt {

// Severity of a message, lowest first (the host API's ATTNRT_LOG_* values).
enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

using LogCallback = std::function<void(LogLevel level, std::string_view message)>;

// Installs `callback` for messages at `min_level` and above (kOff or an empty callback: none;
// the library goes quiet again, ATTNRT_LOG_LEVEL no longer applies). Replaces any callback
// installed before, and returns once no message is being delivered to the old one, so what it
// refers to may be freed then. A callback must not call set_log_callback itself (deadlock).
ATTNRT_API void set_log_callback(LogCallback callback, LogLevel min_level);

// "debug", "info", "warn" (or "warning"), "error", "off"; nullopt for anything else.
ATTNRT_API std::optional<LogLevel> parse_log_level(std::string_view text);

// "DEBUG", "INFO", "WARNING", "ERROR", "OFF".
ATTNRT_API const char* log_level_name(LogLevel level);

}  // namespace attnrt
