// Discovery and naming of plugins. Search directories come, in order of precedence, from the
// config's `attnrt.plugin_dirs`, ATTNRT_PLUGIN_PATH (colon-separated), and the `attnrt/plugins`
// folder next to libattnrt itself. In each directory a plugin is either a sub-directory with a
// manifest (plugin.yaml or config.json) or a loose lib*.so (named by its own entry point).
// Search directories must be absolute: the current directory is never searched implicitly (a
// relative ATTNRT_PLUGIN_PATH entry is refused with a reason). A folder, plugin folder or library
// that other users can write to is refused with the reason (file_trust.hpp) unless
// `allow_writable` says otherwise on purpose. What is found but cannot serve (a corrupt or
// refused library, an unreadable manifest) is kept as a broken entry with its reason.
// Libraries are loaded lazily, once, and shared. Two plugins may share a name when their
// manifests list different devices; otherwise the first directory's wins.
//
// Threads: the scan happens in the constructor; afterwards the records are immutable, and
// every member may be called from several threads at once (load() opens each library once,
// under a lock, whichever thread asks first).
#pragma once

#include <attnrt/runtime/export.hpp>
#include <attnrt/runtime/manifest.hpp>
#include <attnrt/runtime/plugin_library.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace attnrt {

struct PluginRecord {
  std::string name;
  std::vector<std::string> aliases;
  std::filesystem::path library;
  std::optional<Manifest> manifest;
  std::string found_in;  // the search directory (or "path" for explicit paths)
};

// A plugin found in a search folder that cannot be used, and why (listed by `attnrt list`).
struct BrokenPlugin {
  std::filesystem::path path;  // the library file or plugin folder
  std::string reason;          // the full message, naming the path
  std::string found_in;        // the search directory
};

class ATTNRT_API Registry {
 public:
  // Directories are scanned in the order given; the first plugin of a name wins.
  // `pins` (pins.hpp): the sha256 pins every library is checked against before it is loaded.
  explicit Registry(std::vector<std::filesystem::path> search_dirs, bool allow_writable = false, PluginPins pins = {});

  // The folder next to the loaded libattnrt: <libdir>/attnrt/plugins.
  static std::filesystem::path builtin_plugin_dir();
  // Default search path: ATTNRT_PLUGIN_PATH entries then builtin_plugin_dir().
  static std::vector<std::filesystem::path> default_search_dirs();

  const std::vector<std::filesystem::path>& search_dirs() const { return search_dirs_; }
  const std::vector<PluginRecord>& plugins() const { return plugins_; }
  // Problems met while scanning that are not a plugin's (a refused or relative search folder).
  const std::vector<std::string>& scan_problems() const { return scan_problems_; }
  // Plugins found but unusable: loose libraries that fail to load (corrupt, not a plugin,
  // writable by others), plugin folders with an unreadable manifest or unsafe permissions.
  const std::vector<BrokenPlugin>& broken() const { return broken_; }

  // By registered name or alias; nullptr when unknown. One name may be served by several
  // plugins for different devices (eager on the CPU and eager on CUDA, each with its own
  // library): `device` ("cpu", "cuda") picks the one whose manifest lists it; "" the first.
  const PluginRecord* find(const std::string& name, const std::string& device = "") const;

  // Loads (once) the library of a record. Throws attnrt::Error, including when the library's
  // own name differs from its manifest's.
  std::shared_ptr<PluginLibrary> load(const PluginRecord& record);

  // A plugin given by path: a .so file, or a directory with a manifest or a single lib*.so.
  PluginRecord record_for_path(const std::filesystem::path& path) const;

  // Hub-style `org/name[@version]`: the directory <search dir>/org/name (or org/name@version).
  // Never downloads. nullopt when absent.
  std::optional<PluginRecord> find_hub(const std::string& org, const std::string& name,
                                       const std::string& version) const;

 private:
  void scan_dir(const std::filesystem::path& dir);
  void add(PluginRecord record);

  std::vector<std::filesystem::path> search_dirs_;
  std::vector<PluginRecord> plugins_;
  std::map<std::string, std::vector<size_t>> by_name_;
  std::mutex load_mutex_;                                         // guards loaded_ once the scan is over
  std::map<std::string, std::shared_ptr<PluginLibrary>> loaded_;  // by canonical library path
  std::vector<std::string> scan_problems_;
  std::vector<BrokenPlugin> broken_;
  bool allow_writable_ = false;
  PluginPins pins_;
};

}  // namespace attnrt
