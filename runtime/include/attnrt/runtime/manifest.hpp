// A plugin directory's manifest: `plugin.yaml`, or an HF-style `config.json` (the form the
// seeds' sink wrapper shipped). Read before the library is loaded, so a plugin can be listed,
// aliased and matched to a device without running any of its code.
#pragma once

#include <attnrt/runtime/export.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace attnrt {

struct Manifest {
  std::string name;                  // registered name; must match the library's own
  std::string version;               // optional
  std::filesystem::path library;     // absolute path of the shared library
  std::string description;           // optional
  std::vector<std::string> aliases;  // extra names that resolve to this plugin
  std::vector<std::string> devices;  // informational: cpu, cuda
  std::filesystem::path source;      // the manifest file itself
};

// Reads dir/plugin.yaml, else dir/config.json; nullopt when neither exists. When the manifest
// names no library, the directory's only lib*.so is used. Throws attnrt::Error with file:line
// (YAML) or the JSON parser's position for malformed manifests.
ATTNRT_API std::optional<Manifest> read_manifest(const std::filesystem::path& dir);
// The same for a manifest's text, as if read from `file` (JSON when it is named config.json, else
// YAML); relative library paths and a missing `library` are taken in file's folder.
ATTNRT_API Manifest parse_manifest(const std::string& text, const std::filesystem::path& file);

}  // namespace attnrt
