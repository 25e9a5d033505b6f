// libattnrt's C++ entry point: assembles the configuration (built-in defaults < config files
// < overrides), finds the plugins and the device, scans the attention sites, and resolves them.
//
// Threads (the C++ side of host_api.h's contract): a Runtime is immutable after its constructor
// but for the registry's and the resolver's caches, which are guarded, so one Runtime may be
// shared by any number of threads: resolver().resolve(), registry().find()/load() and every
// const member may run concurrently, and so may forward and backward on the Backends resolved
// (backend.hpp). Constructing Runtimes on several threads at once is safe; destroying one must
// not overlap calls on it. Backends keep their plugin loaded and may outlive the Runtime.
#pragma once

#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/export.hpp>
#include <attnrt/runtime/registry.hpp>
#include <attnrt/runtime/resolver.hpp>
#include <attnrt/runtime/settings.hpp>
#include <attnrt/runtime/sites.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attnrt {

struct RuntimeOptions {
  std::vector<std::filesystem::path> config_files;  // none: the embedded configs/default.yaml
  std::vector<std::string> overrides;               // Hydra grammar, applied in order
  bool use_embedded_default = true;                 // with no files, load configs/default.yaml
};

class ATTNRT_API Runtime {
 public:
  // Throws attnrt::Error for unreadable or invalid configuration (with file:line:column or the
  // override text). Warnings (deprecations, "did you mean") are logged and kept in warnings().
  explicit Runtime(const RuntimeOptions& options);

  const Config& config() const { return config_; }
  const Settings& settings() const { return settings_; }
  Registry& registry() { return *registry_; }
  Resolver& resolver() { return *resolver_; }
  const SiteScan& sites() const { return sites_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::vector<KnownIssueRule>& rules() const { return rules_; }

  // <libdir>/../share/attnrt: the default workload's data.
  static std::filesystem::path data_dir();

 private:
  void check_added_top_level_keys(const std::vector<std::string>& overrides);

  Config config_;
  Settings settings_;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<Resolver> resolver_;
  SiteScan sites_;
  std::vector<std::string> warnings_;
  std::vector<KnownIssueRule> rules_;
};

// Configs compiled into libattnrt from configs/: "runtime_defaults.yaml", "default.yaml",
// "deprecations.yaml", "known_issues.yaml". Throws for an unknown name.
ATTNRT_API std::string_view embedded_config(std::string_view name);

}  // namespace attnrt
