#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/overrides.hpp>
#include <attnrt/runtime/runtime.hpp>
#include <attnrt/runtime/settings.hpp>
#include <attnrt/runtime/sites.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include <fmt/format.h>

#include <algorithm>

#include "../log/log.hpp"

namespace attnrt {
namespace {

bool any_plugin_runs_on_cuda(Registry& registry) {
  for (const PluginRecord& record : registry.plugins()) {
    try {
      if (registry.load(record)->capabilities().devices & ATTNRT_DEVICE_BIT_CUDA) return true;
    } catch (const Error&) {
      // An unloadable plugin cannot run anywhere; resolution reports it where it is asked for.
    }
  }
  return false;
}

}  // namespace

std::filesystem::path Runtime::data_dir() {
  // builtin_plugin_dir() is <libdir>/attnrt/plugins; <libdir> is <prefix>/lib or, on
  // multiarch installs, <prefix>/lib/<triplet>.
  const std::filesystem::path libdir = Registry::builtin_plugin_dir().parent_path().parent_path();
  for (const auto& prefix : {libdir.parent_path(), libdir.parent_path().parent_path()}) {
    if (std::filesystem::is_directory(prefix / "share" / "attnrt")) return prefix / "share" / "attnrt";
  }
  return libdir.parent_path() / "share" / "attnrt";
}

// A `+key=value` override that adds a top-level key attnrt does not read, spelled like one of its
// settings (`+strict=true` for `attnrt.strict=true`): a warning that names the setting, an error
// under attnrt.strict. Other added top-level keys belong to the host's configuration (a VERL or
// Hydra config carries many) and are left alone.
void Runtime::check_added_top_level_keys(const std::vector<std::string>& overrides) {
  for (const std::string& text : overrides) {
    const Override o = parse_override(text);
    if ((o.kind != Override::Kind::kAdd && o.kind != Override::Kind::kForce) || o.key.find('.') != std::string::npos ||
        o.key == "attnrt")
      continue;
    const std::vector<std::string>& keys = settings_keys();
    const bool exact = std::find(keys.begin(), keys.end(), o.key) != keys.end();
    const std::string guess = exact ? o.key : closest_match(o.key, keys);
    if (guess.empty()) continue;
    const std::string message =
        fmt::format("override '{}' adds a top-level key '{}' that attnrt does not read; did you mean 'attnrt.{}'?",
                    o.text, o.key, guess);
    if (settings_.strict) throw Error(message + " (an error under attnrt.strict)");
    warnings_.push_back(message + " (it is ignored)");
  }
}

Runtime::Runtime(const RuntimeOptions& options) {
  config_ =
      Config::from_string(std::string(embedded_config("runtime_defaults.yaml")), "<embedded:runtime_defaults.yaml>");
  if (options.config_files.empty() && options.use_embedded_default) {
    config_.merge(Config::from_string(std::string(embedded_config("default.yaml")), "<embedded:default.yaml>"));
  }
  for (const auto& file : options.config_files) config_.merge(Config::from_file(file));
  for (const auto& text : options.overrides) config_.apply_override(text);

  settings_ = read_settings(config_, &warnings_);
  check_added_top_level_keys(options.overrides);
  const Deprecations deprecations = Deprecations::from_yaml(
      YAML::Load(std::string(embedded_config("deprecations.yaml"))), "<embedded:deprecations.yaml>");
  rules_ = parse_rules(YAML::Load(std::string(embedded_config("known_issues.yaml"))), "<embedded:known_issues.yaml>");
  for (const auto& file : settings_.rules_files) {
    auto more = parse_rules(load_yaml_file(file), file.string());
    rules_.insert(rules_.end(), more.begin(), more.end());
  }

  std::vector<std::filesystem::path> dirs = settings_.plugin_dirs;
  for (const auto& d : Registry::default_search_dirs()) dirs.push_back(d);
  registry_ = std::make_unique<Registry>(dirs, settings_.allow_writable_plugins, settings_.pins);
  // A search folder passed over (relative, or writable by others) is a warning: plugins the user
  // expects are missing, or someone else's would have been loaded. Broken plugins in a folder are
  // reported where they are asked for, and by `attnrt list`.
  for (const std::string& problem : registry_->scan_problems()) log::warn("plugin path: {}", problem);
  for (const BrokenPlugin& b : registry_->broken()) log::debug("plugin scan: {}", b.reason);

  DeviceInfo device = select_device(settings_.device, probe_devices());
  if (settings_.device == "auto" && device.dl.device_type == kDLCUDA && !any_plugin_runs_on_cuda(*registry_)) {
    // A GPU with no plugin for it would make every site fail; auto means "where attnrt can run".
    log::info("device auto: {} ({}) found, but no installed plugin supports CUDA; using cpu", device.label(),
              device.name);
    device = probe_devices().cpu;
  }
  resolver_ = std::make_unique<Resolver>(*registry_, settings_, deprecations, rules_, device);

  sites_ = find_sites(config_, deprecations, settings_.default_implementation);
  std::vector<std::string> site_names;
  for (const Site& site : sites_.sites) site_names.push_back(site.name);
  check_context_parallel_sites(settings_.context_parallel, site_names);
  warnings_.insert(warnings_.end(), sites_.warnings.begin(), sites_.warnings.end());
  for (const std::string& w : warnings_) log::warn("{}", w);
}

}  // namespace attnrt
