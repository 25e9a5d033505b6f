#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/log.hpp>
#include <attnrt/runtime/settings.hpp>
#include <attnrt/runtime/sites.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include <fmt/format.h>

namespace attnrt {

const std::vector<std::string>& settings_keys() {
  static const std::vector<std::string> keys = {
      "device",        "strict",       "num_threads",      "plugin_dirs", "default_implementation",
      "fallback",      "known_issues", "rules_files",      "log_level",   "allow_writable_plugins",
      "plugin_sha256", "lockfile",     "context_parallel", "flex"};
  return keys;
}

std::vector<std::string> Settings::fallback_chain(const DeviceInfo& device) const {
  if (device.dl.device_type == kDLCUDA) {
    if (auto it = fallback.find("cuda_sm" + std::to_string(device.cuda_arch)); it != fallback.end()) return it->second;
    if (auto it = fallback.find("cuda"); it != fallback.end()) return it->second;
    return {};
  }
  auto it = fallback.find("cpu");
  return it == fallback.end() ? std::vector<std::string>{} : it->second;
}

namespace {
std::filesystem::path resolve_path(const Config& config, const std::string& dotted, const std::string& value) {
  std::filesystem::path p(value);
  if (p.is_relative()) {
    // Relative to the file that set it; overrides are relative to the working directory.
    const Origin o = config.origin(dotted);
    if (o.override.empty() && !o.file.empty() && o.file.front() != '<')
      p = std::filesystem::path(o.file).parent_path() / p;
  }
  // Absolute from here on: the registry never searches relative to the working directory,
  // which may change; a relative one given on purpose is taken relative to it now.
  return std::filesystem::absolute(p);
}
}  // namespace

Settings read_settings(const Config& config, std::vector<std::string>* warnings) {
  Settings s;
  const YAML::Node section = config.at("attnrt");
  if (!section) return s;
  if (!section.IsMap()) throw Error(config.origin("attnrt").describe() + ": 'attnrt' must be a mapping");
  for (const auto& kv : section) {
    const std::string key = kv.first.as<std::string>();
    const std::string path = "attnrt." + key;
    const std::string where = config.origin(path).describe();
    const YAML::Node& v = kv.second;
    try {
      if (key == "device")
        s.device = v.as<std::string>();
      else if (key == "strict")
        s.strict = v.as<bool>();
      else if (key == "num_threads")
        s.num_threads = v.as<int>();
      else if (key == "default_implementation")
        s.default_implementation = v.as<std::string>();
      else if (key == "known_issues")
        s.known_issues = v.as<bool>();
      else if (key == "allow_writable_plugins")
        s.allow_writable_plugins = v.as<bool>();
      else if (key == "log_level") {
        s.log_level = v.as<std::string>();
        if (!parse_log_level(s.log_level) || s.log_level == "warn") {
          throw Error(fmt::format("{}: attnrt.log_level '{}' is not one of debug, info, warning, error, off", where,
                                  shorten_for_message(s.log_level)));
        }
      } else if (key == "lockfile") {
        if (!v.IsScalar() || v.Scalar().empty()) throw Error(where + ": 'lockfile' must be the path of a lockfile");
        s.lockfile = resolve_path(config, path, v.Scalar());
        std::error_code ec;
        if (!std::filesystem::is_regular_file(s.lockfile, ec)) {
          throw Error(
              fmt::format("{}: lockfile {} does not exist (write it with 'attnrt lock')", where, s.lockfile.string()));
        }
        PluginPins locked = read_lockfile(s.lockfile);
        // Pins set in the config itself stay (plugin_sha256 may come first).
        for (const auto& [name, list] : s.pins.pins_by_name())
          for (const PluginPin& p : list) locked.add(p);
        s.pins = std::move(locked);
      } else if (key == "plugin_sha256") {
        if (!v.IsMap()) throw Error(where + ": 'plugin_sha256' must map plugin names to sha256 digests");
        for (const auto& pin : v) {
          const std::string name = pin.first.as<std::string>();
          const std::string at = config.origin(path + "." + name).describe();
          if (pin.second.IsScalar()) {
            s.pins.add({name, pin.second.Scalar(), at});
          } else if (pin.second.IsSequence()) {
            for (const auto& d : pin.second) s.pins.add({name, d.as<std::string>(), at});
          } else {
            throw Error(at + ": a pin is a sha256 digest or a list of them");
          }
        }
      } else if (key == "context_parallel") {
        s.context_parallel = read_context_parallel(config, path, v);
      } else if (key == "flex") {
        // A site's flex_attention mods (issue 15): read and checked by the tools that build calls,
        // `attnrt run` and `attnrt bench` (harness/flex_config.hpp), which need the workload's shape.
      } else if (key == "plugin_dirs" || key == "rules_files") {
        if (!v.IsSequence()) throw Error(where + ": '" + key + "' must be a list of paths");
        auto& out = key == "plugin_dirs" ? s.plugin_dirs : s.rules_files;
        for (const auto& item : v) out.push_back(resolve_path(config, path, item.as<std::string>()));
      } else if (key == "fallback") {
        if (!v.IsMap()) throw Error(where + ": 'fallback' must map a device (cpu, cuda, cuda_sm90) to a list");
        for (const auto& chain : v) {
          if (!chain.second.IsSequence()) {
            throw Error(config.origin(path + "." + chain.first.as<std::string>()).describe() +
                        ": a fallback chain must be a list of implementations");
          }
          s.fallback[chain.first.as<std::string>()] = chain.second.as<std::vector<std::string>>();
        }
      } else if (warnings) {
        const std::string guess = closest_match(key, settings_keys());
        warnings->push_back(fmt::format("{}: unknown setting 'attnrt.{}' is ignored{}", where, key,
                                        guess.empty() ? "" : "; did you mean '" + guess + "'?"));
      }
    } catch (const YAML::Exception& e) {
      throw Error(where + ": invalid value for 'attnrt." + key + "': " + e.msg);
    }
  }
  if (s.num_threads < 0) throw Error(config.origin("attnrt.num_threads").describe() + ": num_threads must be >= 0");
  return s;
}

}  // namespace attnrt
