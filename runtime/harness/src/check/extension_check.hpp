// The `extensions` check of `attnrt check` (extension_check.cpp), declared for the runner.
#pragma once

#include <filesystem>
#include <string>

namespace attnrt::check {

// extensions: ABI >= 1.1 plugins refuse a required block of an unknown (vendor) type in
// supports() and forward, with a reason naming it, and accept an optional one with output
// bit-identical to the call without it. Skipped, saying why, for ABI 1.0 plugins (the host
// never sends them a chain) and when the plugin refuses the base call.
std::string check_unknown_extensions(const std::filesystem::path& lib);

}  // namespace attnrt::check
