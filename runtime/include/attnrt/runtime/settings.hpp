// The runtime's own settings: the `attnrt:` section of the configuration.
#pragma once

#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/device.hpp>
#include <attnrt/runtime/export.hpp>
#include <attnrt/runtime/pins.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace attnrt {

struct ATTNRT_API Settings {
  std::string device = "auto";  // auto | cpu | cuda | cuda:N
  bool strict = false;          // any fallback is an error listing every reason
  int num_threads = 0;          // CPU threads per call; 0: all
  std::vector<std::filesystem::path> plugin_dirs;
  std::string default_implementation = "auto";  // for sites that set none (VERL: flash_attention_2)
  // Fallback chains: "cpu", "cuda", or "cuda_smNN" for one architecture (most specific wins).
  std::map<std::string, std::vector<std::string>> fallback;
  bool known_issues = true;                        // apply known_issues.yaml
  std::vector<std::filesystem::path> rules_files;  // extra rule files
  // debug | info | warning | error | off: the level a host that prints attnrt's messages (the
  // CLI) prints at when its own command line chose none. The library itself prints nothing
  // (log.hpp).
  std::string log_level = "info";
  // Load plugins from files and folders that other users can write to (refused otherwise; also
  // ATTNRT_ALLOW_WRITABLE_PLUGINS=1). Only for a machine where that is known to be safe.
  bool allow_writable_plugins = false;
  // sha256 pins (pins.hpp): attnrt.plugin_sha256 maps a plugin name to a digest or a list of
  // them; attnrt.lockfile names a lockfile written by `attnrt lock` (relative to the config
  // file that sets it), after which only locked libraries are loaded.
  PluginPins pins;
  std::filesystem::path lockfile;

  std::vector<std::string> fallback_chain(const DeviceInfo& device) const;
};

// Reads config's `attnrt:` section. Unknown keys give "did you mean" warnings with positions;
// values of the wrong type throw attnrt::Error with file:line:column.
ATTNRT_API Settings read_settings(const Config& config, std::vector<std::string>* warnings);

// Settings keys, for "did you mean".
ATTNRT_API const std::vector<std::string>& settings_keys();

}  // namespace attnrt
