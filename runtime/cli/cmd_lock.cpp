// attnrt lock [CONFIG] [OVERRIDES...] [-o FILE] [--json]: writes a lockfile (pins.hpp) with the
// sha256 of every plugin library the configuration can resolve to: each site's value and every
// entry of every device's fallback chain, every library of that name (eager has one for the CPU
// and one for CUDA). What is not installed here is named and left out. With the lockfile in the
// config (attnrt.lockfile), only these files are loaded afterwards. Like the `kernels` package's
// `kernels lock`, it trusts what is installed now: check the plugins before locking them.
#include "commands.hpp"
#include "options.hpp"
#include "table.hpp"

#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/pins.hpp>
#include <attnrt/runtime/registry.hpp>
#include <attnrt/runtime/resolver.hpp>
#include <attnrt/runtime/rules.hpp>
#include <attnrt/runtime/runtime.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

namespace attnrt::cli {
namespace fs = std::filesystem;

namespace {

// The values resolution may try for this config, in a stable order: sites first, then chains.
std::vector<std::string> candidate_values(const Runtime& rt) {
  const Deprecations deprecations = Deprecations::from_yaml(
      YAML::Load(std::string(embedded_config("deprecations.yaml"))), "<embedded:deprecations.yaml>");
  std::vector<std::string> values;
  auto add = [&](std::string v) {
    if (auto it = deprecations.aliases.find(v); it != deprecations.aliases.end()) v = it->second;
    if (classify_value(v).form != ValueForm::kAuto && std::find(values.begin(), values.end(), v) == values.end())
      values.push_back(v);
  };
  for (const Site& site : rt.sites().sites) add(site.value);
  for (const auto& [device, chain] : rt.settings().fallback)
    for (const std::string& v : chain) add(v);
  return values;
}

// Every record a value can reach: all libraries of a name (one per device), the path's, the hub
// folder's.
std::vector<PluginRecord> records_for(const Registry& registry, const std::string& value) {
  const ParsedValue form = classify_value(value);
  if (form.form == ValueForm::kPath) return {registry.record_for_path(value)};
  if (form.form == ValueForm::kHub) {
    auto r = registry.find_hub(form.org, form.name, form.version);
    return r ? std::vector<PluginRecord>{*r} : std::vector<PluginRecord>{};
  }
  std::vector<PluginRecord> found;
  for (const PluginRecord& r : registry.plugins()) {
    if (r.name == value || std::find(r.aliases.begin(), r.aliases.end(), value) != r.aliases.end()) found.push_back(r);
  }
  return found;
}

}  // namespace

int lock_command(const CommonArgs& args, const std::string& output) {
  const RuntimeOptions options = runtime_options(args);
  Runtime rt(options);
  use_config_log_level(rt);
  // A registry without pins: the lock records what is installed, even where an older lockfile
  // in the config would now refuse it.
  Registry registry(rt.registry().search_dirs(), rt.settings().allow_writable_plugins);

  std::vector<LockEntry> entries;
  std::set<std::string> seen;  // canonical library paths
  std::vector<std::string> left_out;
  Table table({"NAME", "VERSION", "SHA256", "LIBRARY", "FOR"});
  for (const std::string& value : candidate_values(rt)) {
    std::vector<PluginRecord> records;
    try {
      records = records_for(registry, value);
    } catch (const Error& e) {
      left_out.push_back(fmt::format("{}: {}", shorten_for_message(value), e.what()));
      continue;
    }
    if (records.empty()) left_out.push_back(fmt::format("{}: no plugin of that name here", shorten_for_message(value)));
    for (const PluginRecord& record : records) {
      const std::string key = fs::weakly_canonical(record.library).string();
      if (!seen.insert(key).second) continue;
      try {
        const auto lib = registry.load(record);
        const fs::path where = fs::weakly_canonical(record.library);
        entries.push_back({lib->name(), lib->version(), lib->sha256(), where});
        table.add({lib->name(), lib->version(), entries.back().sha256.substr(0, 16) + "...", where.string(),
                   shorten_for_message(value)});
      } catch (const Error& e) {
        left_out.push_back(fmt::format("{}: {}", shorten_for_message(value), e.what()));
      }
    }
  }
  if (entries.empty()) throw Error("no plugin library to lock: " + fmt::format("{}", fmt::join(left_out, "; ")));

  fs::path out = output;
  if (out.empty())
    out = (options.config_files.empty() ? fs::current_path() : options.config_files.front().parent_path()) /
          "attnrt.lock";
  std::string command = "attnrt lock";
  for (const std::string& a : args.positional) command += " " + shorten_for_message(a);
  write_lockfile(out, entries, command);

  if (args.json) {
    nlohmann::json j = {{"lockfile", out.string()}, {"plugins", nlohmann::json::array()}, {"left_out", left_out}};
    for (const LockEntry& e : entries)
      j["plugins"].push_back(
          {{"name", e.name}, {"version", e.version}, {"sha256", e.sha256}, {"library", e.library.string()}});
    std::puts(j.dump(2).c_str());
  } else {
    table.print();
    for (const std::string& l : left_out) fmt::print("not locked: {}\n", l);
    fmt::print("wrote {} ({} plugin libraries); use it with 'attnrt.lockfile: {}'\n", out.string(), entries.size(),
               out.string());
  }
  return 0;
}

}  // namespace attnrt::cli
