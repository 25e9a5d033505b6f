#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/registry.hpp>

#include "file_trust.hpp"

#include <boost/dll/runtime_symbol_info.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace attnrt {
namespace fs = std::filesystem;

Registry::Registry(std::vector<fs::path> search_dirs, bool allow_writable, PluginPins pins)
    : search_dirs_(std::move(search_dirs)),
      allow_writable_(allow_writable || writable_plugins_allowed_by_environment()),
      pins_(std::move(pins)) {
  for (const fs::path& dir : search_dirs_) scan_dir(dir);
}

fs::path Registry::builtin_plugin_dir() {
  // The library (or executable) this line is compiled into: libattnrt.so.
  return boost::dll::this_line_location().parent_path() / "attnrt" / "plugins";
}

std::vector<fs::path> Registry::default_search_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("ATTNRT_PLUGIN_PATH")) {
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ':')) {
      if (!item.empty()) dirs.emplace_back(item);
    }
  }
  dirs.push_back(builtin_plugin_dir());
  return dirs;
}

namespace {

const std::vector<std::string>& devices_of(const PluginRecord& r) {
  static const std::vector<std::string> none;
  return r.manifest ? r.manifest->devices : none;
}

// Without a manifest's device list a plugin may claim any device.
bool serves(const PluginRecord& r, const std::string& device) {
  const auto& devices = devices_of(r);
  return device.empty() || devices.empty() || std::find(devices.begin(), devices.end(), device) != devices.end();
}

bool overlap(const PluginRecord& a, const PluginRecord& b) {
  if (devices_of(a).empty() || devices_of(b).empty()) return true;
  for (const std::string& d : devices_of(a)) {
    if (serves(b, d)) return true;
  }
  return false;
}

}  // namespace

void Registry::add(PluginRecord record) {
  if (auto it = by_name_.find(record.name); it != by_name_.end()) {
    for (size_t i : it->second) {
      if (overlap(plugins_[i], record)) return;  // an earlier directory wins
    }
  }
  const size_t index = plugins_.size();
  by_name_[record.name].push_back(index);
  for (const std::string& alias : record.aliases) by_name_[alias].push_back(index);
  plugins_.push_back(std::move(record));
}

void Registry::scan_dir(const fs::path& dir) {
  std::error_code ec;
  if (dir.is_relative()) {
    scan_problems_.push_back(
        fmt::format("search folder '{}' is relative and was not searched: attnrt never searches "
                    "the current directory implicitly (make ATTNRT_PLUGIN_PATH entries absolute)",
                    dir.string()));
    return;
  }
  if (!fs::is_directory(dir, ec)) return;
  if (!allow_writable_) {
    if (const std::string why = writable_by_others(dir); !why.empty()) {
      scan_problems_.push_back(fmt::format("search folder {} refused: {}; nothing in it is loaded; {}", dir.string(),
                                           why, writable_plugins_override_hint()));
      return;
    }
  }
  std::vector<fs::path> entries;
  for (const auto& entry : fs::directory_iterator(dir, ec)) entries.push_back(entry.path());
  std::sort(entries.begin(), entries.end());  // deterministic precedence inside one folder
  for (const fs::path& path : entries) {
    try {
      if (fs::is_directory(path)) {
        if (!allow_writable_ && (fs::exists(path / "plugin.yaml") || fs::exists(path / "config.json"))) {
          if (const std::string why = writable_by_others(path); !why.empty()) {
            throw Error(ATTNRT_ERROR_UNSUPPORTED, fmt::format("{}: refused: plugin folder is a {}; {}", path.string(),
                                                              why, writable_plugins_override_hint()));
          }
        }
        if (auto manifest = read_manifest(path)) {
          PluginRecord r{manifest->name, manifest->aliases, manifest->library, manifest, dir.string()};
          add(std::move(r));
        }
        // Hub-style org/ folders and folders without a manifest are not listed; they are
        // reachable by path or by org/name.
      } else if (path.extension() == ".so") {
        // A loose library is named by its own entry point, so it has to be opened.
        auto lib = PluginLibrary::open(path, allow_writable_, &pins_);
        loaded_[fs::weakly_canonical(path).string()] = lib;
        add(PluginRecord{lib->name(), {}, path, std::nullopt, dir.string()});
      }
    } catch (const Error& e) {
      broken_.push_back(BrokenPlugin{path, e.what(), dir.string()});
    }
  }
}

const PluginRecord* Registry::find(const std::string& name, const std::string& device) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return nullptr;
  for (size_t i : it->second) {
    if (serves(plugins_[i], device)) return &plugins_[i];
  }
  return &plugins_[it->second.front()];  // its capability check then says why not this device
}

std::shared_ptr<PluginLibrary> Registry::load(const PluginRecord& record) {
  const std::string key = fs::weakly_canonical(record.library).string();
  std::shared_ptr<PluginLibrary> lib;
  {
    // Threads resolving at once ask for the same libraries: each is opened (its entry point
    // run) by the first, under the lock, and shared. A failed open leaves no entry.
    std::lock_guard<std::mutex> lock(load_mutex_);
    auto it = loaded_.find(key);
    lib = it != loaded_.end() ? it->second : PluginLibrary::open(record.library, allow_writable_, &pins_, record.name);
    loaded_[key] = lib;
  }
  if (record.manifest && lib->name() != record.manifest->name) {
    throw Error(record.library.string() + ": library calls itself '" + lib->name() + "' but its manifest " +
                record.manifest->source.string() + " says '" + record.manifest->name + "'");
  }
  return lib;
}

PluginRecord Registry::record_for_path(const fs::path& raw) const {
  fs::path path = raw;
  const std::string text = raw.string();
  if (!text.empty() && text[0] == '~') {
    const char* home = std::getenv("HOME");
    path = fs::path(home ? home : "") / text.substr(text.size() > 1 && text[1] == '/' ? 2 : 1);
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (auto manifest = read_manifest(path)) {
      return PluginRecord{manifest->name, manifest->aliases, manifest->library, manifest, "path"};
    }
    std::vector<fs::path> libs;
    for (const auto& entry : fs::directory_iterator(path)) {
      if (entry.path().extension() == ".so") libs.push_back(entry.path());
    }
    if (libs.size() != 1) {
      throw Error(path.string() +
                  ": a plugin directory needs a plugin.yaml or config.json manifest, or exactly one .so (found " +
                  std::to_string(libs.size()) + ")");
    }
    return PluginRecord{"", {}, libs.front(), std::nullopt, "path"};
  }
  if (!fs::exists(path, ec)) throw Error(path.string() + ": no such file or directory");
  return PluginRecord{"", {}, path, std::nullopt, "path"};
}

std::optional<PluginRecord> Registry::find_hub(const std::string& org, const std::string& name,
                                               const std::string& version) const {
  for (const fs::path& dir : search_dirs_) {
    std::vector<fs::path> candidates;
    if (!version.empty()) candidates.push_back(dir / org / (name + "@" + version));
    candidates.push_back(dir / org / name);
    for (const fs::path& c : candidates) {
      std::error_code ec;
      if (!fs::is_directory(c, ec)) continue;
      PluginRecord r = record_for_path(c);
      if (!version.empty() && r.manifest && !r.manifest->version.empty() && r.manifest->version != version) {
        continue;  // org/name holds another version
      }
      r.found_in = dir.string();
      return r;
    }
  }
  return std::nullopt;
}

}  // namespace attnrt
