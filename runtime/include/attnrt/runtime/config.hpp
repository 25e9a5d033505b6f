// Layered YAML configuration (yaml-cpp): built-in defaults < config files < command-line
// overrides, with the origin of every key kept so messages can say "file:line:column" or name
// the override that set it.
#pragma once

#include <attnrt/runtime/export.hpp>

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace attnrt {

struct ATTNRT_API Origin {
  std::string file;      // config file, "<embedded:name>", or empty for overrides
  int line = 0;          // 1-based; 0 when unknown
  int column = 0;        // 1-based
  std::string override;  // the override text, when an override set the key

  // "configs/x.yaml:3:5" or "override '+a.b=v'"
  std::string describe() const;
};

class ATTNRT_API Config {
 public:
  Config();
  // Parses YAML text; `name` is used in messages and as the origin's file (relative paths in
  // a config resolve against the folder of the file that set them). Throws attnrt::Error
  // "name:line:col: message".
  static Config from_string(const std::string& text, const std::string& name);
  static Config from_file(const std::filesystem::path& path);

  // Deep merge: mappings merge key by key; scalars and sequences of `upper` replace.
  void merge(const Config& upper);

  // Applies one Hydra-style override (see overrides.hpp).
  void apply_override(const std::string& text);

  const YAML::Node& root() const { return root_; }
  // Node at a dotted path (invalid Node when absent).
  YAML::Node at(const std::string& dotted) const;
  // Where the key at a dotted path was set (empty Origin when unknown).
  Origin origin(const std::string& dotted) const;
  void set_origin(const std::string& dotted, Origin origin);
  void erase_origins_under(const std::string& dotted);

 private:
  void record_origins(const YAML::Node& node, const std::string& prefix, const std::string& file);

  YAML::Node root_;
  std::map<std::string, Origin> origins_;
};

// Splits "a.b.c" into {"a", "b", "c"}.
ATTNRT_API std::vector<std::string> split_path(const std::string& dotted);

}  // namespace attnrt
