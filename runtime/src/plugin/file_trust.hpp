// Who may change a plugin before attnrt runs it. A library another user can replace, or a folder
// another user can drop a library into, hands that user code execution inside every job that
// loads it (and a dropped `eager` would shadow the built-in one), so both are refused unless the
// user says otherwise on purpose: `attnrt.allow_writable_plugins: true` in a config, or
// ATTNRT_ALLOW_WRITABLE_PLUGINS=1 in the environment.
#pragma once

#include <filesystem>
#include <string>

namespace attnrt {

// The environment's override (ATTNRT_ALLOW_WRITABLE_PLUGINS set to 1, true or yes).
bool writable_plugins_allowed_by_environment();

// "" when `path` (a plugin file or a folder plugins are read from) is writable only by its owner
// (or also by the owner's private group, as umask 002 leaves files: a group named after the
// owner, its primary group, with no other members) and owned by this user or root; otherwise the reason, for example
// "writable by every user (mode 0777)" or "owned by uid 1001, not by this user (uid 0) or root". Symbolic links are
// followed (the target is what gets loaded). A path that cannot be examined is reported too.
std::string writable_by_others(const std::filesystem::path& path);

// The sentence a refusal ends with: how to override it on purpose.
const char* writable_plugins_override_hint();

}  // namespace attnrt
