// The checks of `attnrt check`, one function each, as the runner calls them inside
// run_isolated (isolation.hpp): each returns its detail text for a pass and throws CheckFailed
// or CheckSkipped. Each opens the library itself, because each runs in its own child process.
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/runtime/registry.hpp>

#include <filesystem>
#include <string>

namespace attnrt::check {

// library_checks.cpp: the file and its C table, before any attention call.
std::string check_load(const std::filesystem::path& lib);
std::string check_exports(const std::filesystem::path& lib);
std::string check_abi(const std::filesystem::path& lib);
std::string check_manifest(const PluginRecord& record);
std::string check_create(const std::filesystem::path& lib);

// numerics_check.cpp: numerics/cpu/<dtype>, judged against `eager` (the runtime's eager
// plugin's library; empty when it is not installed: the dtype's fixed tolerance instead).
std::string check_numerics(const std::filesystem::path& lib, attnrt_dtype dtype, const std::filesystem::path& eager);

// argument_checks.cpp: support-query and bad-arguments/<mistake>, one of kBadArgumentMistakes.
inline constexpr const char* kBadArgumentMistakes[] = {"null-q",     "null-data",      "wrong-dtype", "shape-mismatch",
                                                       "misaligned", "non-contiguous", "wrong-device"};
std::string check_support_query(const std::filesystem::path& lib);
std::string check_bad_argument(const std::filesystem::path& lib, const std::string& mistake);

// leak_check.cpp: leaks (memory growth over repeated calls and instances); `eager` times the
// same calls for the time limit.
std::string check_leaks(const std::filesystem::path& lib, const std::filesystem::path& eager);

// repeatability_checks.cpp: threads and deterministic.
std::string check_threads(const std::filesystem::path& lib, int threads, const std::filesystem::path& eager);
std::string check_deterministic(const std::filesystem::path& lib, const std::filesystem::path& eager);

}  // namespace attnrt::check
