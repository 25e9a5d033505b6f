// sha256 pins for plugin libraries: which exact files attnrt may load. A structural check
// (elf_check) cannot tell damaged or swapped machine code from good code; a digest can. Pins
// come from the configuration (`attnrt.plugin_sha256: {name: <hex>}`, for the plugins named
// there) or from a lockfile (`attnrt.lockfile: attnrt.lock`, written by `attnrt lock`, which
// pins every plugin a config can resolve to, the way the `kernels` package's kernels.lock does).
//
// The check runs before the dynamic loader sees a file (PluginLibrary::open), on the digest of
// the bytes that are then loaded:
//   - a library whose plugin name has pins must have one of those digests (a name may have
//     several: eager's CPU and CUDA libraries);
//   - with a lockfile, a library whose name has no pin, or whose name is not known before it is
//     loaded (a loose .so in a search folder, a path), must have a digest the lockfile lists;
//     after loading, its reported name is checked against its pins again;
//   - without pins nothing is hashed, and loading is as before.
// A refused library is an attnrt::Error (UNSUPPORTED) naming the path, both digests and where
// the pin was set, so resolution falls back with that reason, or fails under strict mode.
#pragma once

#include <attnrt/runtime/export.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace attnrt {

struct PluginPin {
  std::string name;    // the plugin's registered name
  std::string sha256;  // 64 lowercase hex digits
  std::string origin;  // where it was set: "c.yaml:7:11" or "attnrt.lock:12:7"
};

class ATTNRT_API PluginPins {
 public:
  // Throws attnrt::Error naming `pin.origin` when the digest is not 64 hex digits.
  void add(PluginPin pin);
  // A lockfile is in force: libraries that no pin covers are refused.
  void require_every_library(std::string lockfile);
  bool empty() const { return by_name_.empty() && lockfile_.empty(); }
  const std::string& lockfile() const { return lockfile_; }
  const std::map<std::string, std::vector<PluginPin>>& pins_by_name() const { return by_name_; }

  // "" when a library with digest `sha256` may be loaded as `name` ("" when its name is not
  // known yet), else the reason (without the path, which the caller adds).
  std::string refusal(const std::string& name, const std::string& sha256) const;

 private:
  std::map<std::string, std::vector<PluginPin>> by_name_;
  std::map<std::string, PluginPin> by_digest_;
  std::string lockfile_;
};

// The sha256 of a file, 64 lowercase hex digits (OpenSSL's EVP). Throws attnrt::Error naming
// the path when it cannot be read.
ATTNRT_API std::string sha256_of_file(const std::filesystem::path& path);

// One plugin library as `attnrt lock` records it.
struct LockEntry {
  std::string name;
  std::string version;
  std::string sha256;
  std::filesystem::path library;  // where it was found when locked (for people; not checked)
};

// Reads a lockfile (YAML, the configuration's limits: yaml_input.hpp) into pins that require
// every library. Throws attnrt::Error with file:line:column for a malformed one.
ATTNRT_API PluginPins read_lockfile(const std::filesystem::path& path);
// Writes `entries` as a lockfile; `generated_by` is the command, kept as a comment.
ATTNRT_API void write_lockfile(const std::filesystem::path& path, const std::vector<LockEntry>& entries,
                               const std::string& generated_by);

}  // namespace attnrt
