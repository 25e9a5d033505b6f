#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/manifest.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace attnrt {
namespace fs = std::filesystem;
namespace {

// The directory's only lib*.so, used when a manifest names no library.
fs::path only_library(const fs::path& dir, const fs::path& manifest) {
  fs::path found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".so") continue;
    if (!found.empty())
      throw Error(manifest.string() + ": several .so files in " + dir.string() + "; name one with 'library'");
    found = entry.path();
  }
  if (found.empty()) throw Error(manifest.string() + ": no 'library' given and no .so file in " + dir.string());
  return found;
}

Manifest from_yaml(const std::string& text, const fs::path& file, const fs::path& dir) {
  const YAML::Node node = load_yaml(text, file.string());  // limits, UTF-8, duplicate keys: yaml_input.hpp
  if (!node.IsMap()) throw Error(file.string() + ": a plugin manifest must be a mapping");
  auto at = [&](const char* key) { return node[key]; };
  auto where = [&](const char* key) {
    const YAML::Mark m = node[key].Mark();
    return file.string() + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  };
  Manifest m;
  m.source = file;
  try {
    if (!at("name") || !at("name").IsScalar()) throw Error(file.string() + ": missing required key 'name'");
    m.name = at("name").as<std::string>();
    if (at("version")) m.version = at("version").as<std::string>();
    if (at("description")) m.description = at("description").as<std::string>();
    if (at("aliases")) {
      if (!at("aliases").IsSequence()) throw Error(where("aliases") + ": 'aliases' must be a list");
      m.aliases = at("aliases").as<std::vector<std::string>>();
    }
    if (at("devices")) {
      if (!at("devices").IsSequence()) throw Error(where("devices") + ": 'devices' must be a list");
      m.devices = at("devices").as<std::vector<std::string>>();
    }
    m.library = at("library") ? dir / at("library").as<std::string>() : only_library(dir, file);
  } catch (const YAML::Exception& e) {
    throw Error(file.string() + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return m;
}

// HF-style config.json: the same keys, optionally nested under "attnrt". Read with the limits
// of every other file from outside (yaml_input.hpp): 1 MiB, UTF-8, 64 levels of nesting, keys and
// string values of at most 4 KiB.
Manifest from_json(const std::string& text, const fs::path& file, const fs::path& dir) {
  if (text.size() > kMaxYamlFileBytes) {
    throw Error(file.string() + ": " + std::to_string(text.size()) + " bytes is larger than the limit of " +
                std::to_string(kMaxYamlFileBytes) + " bytes (1 MiB) for a config");
  }
  if (const size_t bad = invalid_utf8_offset(text); bad != std::string::npos) {
    throw Error(file.string() + ": invalid UTF-8 at byte " + std::to_string(bad));
  }
  // Keys seen in each open object: a repeated key is an error, as in the YAML files (YAML 1.2
  // forbids it; RFC 8259 leaves it undefined and nlohmann-json would keep the last silently).
  std::vector<std::set<std::string>> open_objects;
  auto limits = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) open_objects.emplace_back();
    if (event == Event::object_end && !open_objects.empty()) open_objects.pop_back();
    if (event == Event::key && !open_objects.empty() && parsed.is_string() &&
        !open_objects.back().insert(parsed.get_ref<const std::string&>()).second) {
      throw Error(file.string() + ": duplicate key '" + shorten_for_message(parsed.get_ref<const std::string&>()) +
                  "' in one object (each key may appear once)");
    }
    if (depth > kMaxYamlDepth) {
      throw Error(file.string() + ": nested deeper than " + std::to_string(kMaxYamlDepth) + " levels");
    }
    if ((event == nlohmann::json::parse_event_t::key || event == nlohmann::json::parse_event_t::value) &&
        parsed.is_string() && parsed.get_ref<const std::string&>().size() > kMaxYamlValueBytes) {
      throw Error(file.string() + ": a string of " + std::to_string(parsed.get_ref<const std::string&>().size()) +
                  " bytes is longer than the limit of " + std::to_string(kMaxYamlValueBytes) +
                  " bytes: " + shorten_for_message(parsed.get_ref<const std::string&>()));
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, limits);
  } catch (const nlohmann::json::exception& e) {
    throw Error(file.string() + ": " + e.what());
  }
  const nlohmann::json& c = j.contains("attnrt") ? j["attnrt"] : j;
  Manifest m;
  m.source = file;
  try {
    if (!c.contains("name")) throw Error(file.string() + ": missing required key 'name'");
    m.name = c["name"].get<std::string>();
    m.version = c.value("version", "");
    m.description = c.value("description", "");
    m.aliases = c.value("aliases", std::vector<std::string>{});
    m.devices = c.value("devices", std::vector<std::string>{});
    m.library = c.contains("library") ? dir / c["library"].get<std::string>() : only_library(dir, file);
  } catch (const nlohmann::json::exception& e) {
    throw Error(file.string() + ": " + e.what());
  }
  return m;
}

}  // namespace

Manifest parse_manifest(const std::string& text, const fs::path& file) {
  const fs::path dir = file.parent_path();
  return file.filename() == "config.json" ? from_json(text, file, dir) : from_yaml(text, file, dir);
}

std::optional<Manifest> read_manifest(const fs::path& dir) {
  for (const char* name : {"plugin.yaml", "config.json"}) {
    if (fs::is_regular_file(dir / name)) return parse_manifest(read_yaml_file(dir / name), dir / name);
  }
  return std::nullopt;
}

}  // namespace attnrt
