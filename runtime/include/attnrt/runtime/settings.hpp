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

// attnrt.context_parallel (issue 20, docs/distributed.md): the sites whose attention the host runs
// as ring attention over `size` ranks, each holding a shard of the sequence. attnrt does not start
// the ranks: the setting reaches the host through each site's resolution (Resolution, and
// attnrt_backend_context_parallel in host_api.h), and the host builds the ring (attnrt_ring).
//   attnrt:
//     context_parallel: {size: 4, layout: zigzag, sites: [actor_rollout_ref.model]}
struct ContextParallelSetting {
  int size = 1;                    // ranks of the ring (>= 1); 1: off
  std::string layout = "zigzag";   // zigzag (causal: balanced) | contiguous (sliding windows)
  std::vector<std::string> sites;  // the sites it applies to; empty: every site
  std::string where;               // file:line:column of attnrt.context_parallel, for messages

  bool enabled() const { return size > 1; }
};

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
  ContextParallelSetting context_parallel;  // attnrt.context_parallel

  std::vector<std::string> fallback_chain(const DeviceInfo& device) const;
  // The context parallelism of `site`: attnrt.context_parallel when it names the site (or names
  // none), else size 1.
  ContextParallelSetting context_parallel_for(const std::string& site) const;
};

// Reads config's `attnrt:` section. Unknown keys give "did you mean" warnings with positions;
// values of the wrong type throw attnrt::Error with file:line:column.
ATTNRT_API Settings read_settings(const Config& config, std::vector<std::string>* warnings);

// Reads attnrt.context_parallel (the mapping `node`, set at dotted path `path`). Throws
// attnrt::Error with file:line:column for a value that is not a mapping, a missing or bad size, a
// layout other than zigzag or contiguous, sites that are not a list of names, and an unknown key
// (with "did you mean": a key ignored silently would change how a distributed job computes).
ATTNRT_API ContextParallelSetting read_context_parallel(const Config& config, const std::string& path,
                                                        const YAML::Node& node);
// The sites attnrt.context_parallel names must be attention sites of the configuration: throws
// attnrt::Error naming the setting's position, the unknown site and the closest known one.
ATTNRT_API void check_context_parallel_sites(const ContextParallelSetting& setting,
                                             const std::vector<std::string>& site_names);

// Settings keys, for "did you mean".
ATTNRT_API const std::vector<std::string>& settings_keys();

}  // namespace attnrt
