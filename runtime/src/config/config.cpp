#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/overrides.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>

namespace attnrt {
namespace fs = std::filesystem;

std::string Origin::describe() const {
  if (!override.empty()) return "override '" + shorten_for_message(override) + "'";
  if (file.empty()) return "(built-in)";
  if (line == 0) return file;
  return fmt::format("{}:{}:{}", file, line, column);
}

std::vector<std::string> split_path(const std::string& dotted) {
  std::vector<std::string> parts;
  std::string part;
  std::stringstream ss(dotted);
  while (std::getline(ss, part, '.')) parts.push_back(part);
  return parts;
}

Config::Config() : root_(YAML::NodeType::Map) {}

Config Config::from_string(const std::string& text, const std::string& name) {
  Config c;
  YAML::Node node = load_yaml(text, name);  // limits, UTF-8, duplicate keys: yaml_input.hpp
  if (node.IsNull()) node = YAML::Node(YAML::NodeType::Map);
  if (!node.IsMap()) throw Error(name + ":1:1: the top level of a config must be a mapping");
  c.root_ = node;
  c.record_origins(c.root_, "", name);
  return c;
}

Config Config::from_file(const fs::path& path) {
  if (!std::ifstream(path)) throw Error(path.string() + ": cannot open config file");
  return from_string(read_yaml_file(path), path.string());
}

// Each mapping of the file once: a mapping reached again through an alias (the same node, at the
// same place in the file) is not walked again, and keys under it take the alias's position
// (origin() uses the nearest ancestor's). Walking every alias-expanded copy recorded a path of up
// to 64 keys of 4 KiB for each of up to 10^6 nodes: an 80 KB file of nested aliases within the
// limits of yaml_input.hpp took gigabytes.
void Config::record_origins(const YAML::Node& node, const std::string& prefix, const std::string& file) {
  std::set<size_t> walked;  // byte offsets of the mappings walked
  auto walk = [&](auto& self, const YAML::Node& map, const std::string& at) -> void {
    if (!map.IsMap() || !walked.insert(static_cast<size_t>(map.Mark().pos)).second) return;
    for (const auto& kv : map) {
      const std::string key = kv.first.as<std::string>();
      const std::string path = at.empty() ? key : at + "." + key;
      const YAML::Mark m = kv.first.Mark();
      origins_[path] = Origin{file, m.line + 1, m.column + 1, ""};
      self(self, kv.second, path);
    }
  };
  walk(walk, node, prefix);
}

namespace {
// yaml-cpp nodes share storage: clone so a merged config never aliases its inputs.
void merge_into(YAML::Node target, const YAML::Node& upper) {
  for (const auto& kv : upper) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& const_target = target;
    const YAML::Node existing = const_target[key];  // copy-construct: shares, never rebinds
    if (existing && existing.IsMap() && kv.second.IsMap()) {
      merge_into(existing, kv.second);
    } else {
      target[key] = YAML::Clone(kv.second);
    }
  }
}
}  // namespace

void Config::merge(const Config& upper) {
  merge_into(root_, upper.root_);
  for (const auto& [path, origin] : upper.origins_) origins_[path] = origin;
}

YAML::Node Config::at(const std::string& dotted) const {
  // Walk with reset(): yaml-cpp's operator= would rebind the node walked *from*.
  YAML::Node walk;
  walk.reset(root_);
  for (const std::string& part : split_path(dotted)) {
    if (!walk.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node& const_walk = walk;  // const operator[] never inserts
    YAML::Node next = const_walk[part];
    if (!next) return YAML::Node(YAML::NodeType::Undefined);
    walk.reset(next);
  }
  return walk;
}

Origin Config::origin(const std::string& dotted) const {
  // Keys inside a value set by an override have no origin of their own: use the nearest
  // ancestor's.
  std::string path = dotted;
  while (true) {
    if (auto it = origins_.find(path); it != origins_.end()) return it->second;
    const size_t dot = path.rfind('.');
    if (dot == std::string::npos) return Origin{};
    path.resize(dot);
  }
}

void Config::set_origin(const std::string& dotted, Origin origin) { origins_[dotted] = std::move(origin); }

void Config::erase_origins_under(const std::string& dotted) {
  for (auto it = origins_.begin(); it != origins_.end();) {
    const bool under = it->first == dotted || it->first.rfind(dotted + ".", 0) == 0;
    it = under ? origins_.erase(it) : std::next(it);
  }
}

void Config::apply_override(const std::string& text) {
  const Override o = parse_override(text);
  const std::vector<std::string> parts = split_path(o.key);
  YAML::Node value;
  if (o.has_value) {
    if (const size_t bad = invalid_utf8_offset(text); bad != std::string::npos) {
      throw Error(fmt::format("override '{}': invalid UTF-8 at byte {} (0x{:02x}); overrides must be UTF-8 text",
                              shorten_for_message(text.substr(0, bad)), bad, static_cast<unsigned char>(text[bad])));
    }
    try {
      value = load_yaml(o.value, "value");
    } catch (const Error& e) {
      throw Error("override '" + shorten_for_message(text) +
                  "': value is not valid YAML or breaks a limit: " + e.what());
    }
  }

  // Walk to the parent mapping, creating it for + and ++ (Hydra creates intermediate nodes).
  YAML::Node parent;
  parent.reset(root_);  // reset(), never operator=: see Config::at
  std::string walked;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    walked += (walked.empty() ? "" : ".") + parts[i];
    const YAML::Node& cparent = parent;
    if (!cparent[parts[i]]) {
      if (o.kind == Override::Kind::kSet) {
        throw Error("override '" + text + "': key '" + walked + "' is not in the config; to add it, use '+" + o.key +
                    "=" + o.value + "'");
      }
      if (o.kind == Override::Kind::kDelete)
        throw Error("override '" + text + "': cannot delete '" + o.key + "': '" + walked + "' does not exist");
      parent[parts[i]] = YAML::Node(YAML::NodeType::Map);
      set_origin(walked, Origin{"", 0, 0, text});
    }
    const YAML::Node child = cparent[parts[i]];  // copy-construct: shares, never rebinds
    if (!child.IsMap()) {
      throw Error("override '" + text + "': '" + walked + "' is a " + (child.IsSequence() ? "list" : "value") +
                  ", not a mapping, so it has no key '" + parts[i + 1] + "'");
    }
    parent.reset(child);
  }
  const std::string& leaf = parts.back();
  const YAML::Node& cparent = parent;
  const bool exists = static_cast<bool>(cparent[leaf]);
  switch (o.kind) {
    case Override::Kind::kSet:
      if (!exists) {
        throw Error("override '" + text + "': key '" + o.key + "' is not in the config; to add it, use '+" + o.key +
                    "=" + o.value + "'");
      }
      break;
    case Override::Kind::kAdd:
      if (exists) {
        throw Error("override '" + text + "': an item is already at '" + o.key + "'; to override it, use '" + o.key +
                    "=" + o.value + "' or '++" + o.key + "=" + o.value + "'");
      }
      break;
    case Override::Kind::kForce: break;
    case Override::Kind::kDelete: {
      if (!exists) throw Error("override '" + text + "': cannot delete '" + o.key + "': it is not in the config");
      if (o.has_value) {
        const std::string current = YAML::Dump(cparent[leaf]);
        if (current != YAML::Dump(value)) {
          throw Error("override '" + text + "': cannot delete '" + o.key + "': its value is '" + current + "', not '" +
                      o.value + "'");
        }
      }
      parent.remove(leaf);
      erase_origins_under(o.key);
      return;
    }
  }
  parent[leaf] = value;
  erase_origins_under(o.key);
  set_origin(o.key, Origin{"", 0, 0, text});
}

}  // namespace attnrt
