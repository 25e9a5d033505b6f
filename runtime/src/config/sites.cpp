#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/resolver.hpp>
#include <attnrt/runtime/sites.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace attnrt {
namespace {

constexpr const char* kImplementationKey = "attn_implementation";
constexpr const char* kOverrideConfigKey = "override_config";

// Sections owned by attnrt itself hold no attention sites.
bool is_runtime_section(const std::string& path) { return path == "attnrt" || path == "workload"; }

std::string site_name(const std::string& path) {
  const std::string suffix = std::string(".") + kOverrideConfigKey;
  if (path.empty()) return kImplementationKey;
  if (path == kOverrideConfigKey) return kImplementationKey;
  if (path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return path.substr(0, path.size() - suffix.size());
  }
  return path;
}

struct Scanner {
  const Config& config;
  const Deprecations& deprecations;
  const std::string& default_implementation;
  SiteScan scan;
  std::vector<std::string> known_keys;

  std::string join(const std::string& path, const std::string& key) const {
    return path.empty() ? key : path + "." + key;
  }

  std::string scalar(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar())
      throw Error(config.origin(path).describe() + ": '" + path +
                  "' must be a string (an implementation name, auto, a path or org/name)");
    return n.as<std::string>();
  }

  void check_spelling(const std::string& key, const std::string& path) {
    if (std::find(known_keys.begin(), known_keys.end(), key) != known_keys.end()) return;
    const std::string guess = closest_match(key, known_keys);
    if (!guess.empty()) {
      scan.warnings.push_back(
          fmt::format("{}: unknown key '{}' next to an attention site; did you mean '{}'? (it is ignored)",
                      config.origin(path).describe(), key, guess));
    }
  }

  void visit(const YAML::Node& node, const std::string& path, const std::string& own_key) {
    if (!node.IsMap()) return;
    const YAML::Node& n = node;
    bool has_site = false;
    if (const YAML::Node v = n[kImplementationKey]) {
      const std::string key_path = join(path, kImplementationKey);
      scan.sites.push_back(Site{site_name(path), key_path, scalar(v, key_path), config.origin(key_path), false});
      has_site = true;
    }
    for (const auto& [key, dep] : deprecations.keys) {
      const YAML::Node v = n[key];
      if (!v) continue;
      const std::string key_path = join(path, key);
      const Origin where = config.origin(key_path);
      if (has_site) {
        scan.warnings.push_back(fmt::format("{}: deprecated '{}' is ignored because '{}' is set next to it",
                                            where.describe(), key, kImplementationKey));
        continue;
      }
      std::string value;
      if (dep.boolean) {
        bool flag = false;
        try {
          flag = v.as<bool>();
        } catch (const YAML::Exception&) {
          throw Error(where.describe() + ": '" + key + "' must be true or false");
        }
        value = flag ? dep.when_true : default_implementation;
      } else {
        value = scalar(v, key_path);
      }
      scan.warnings.push_back(fmt::format("{}: '{}' is deprecated; use '{}: {}' instead{}", where.describe(), key,
                                          kImplementationKey, value,
                                          dep.message.empty() ? "" : " (" + dep.message + ")"));
      scan.sites.push_back(Site{site_name(path), key_path, value, where, false});
      has_site = true;
    }
    if (!has_site && own_key == kOverrideConfigKey) {
      // VERL: a model's override_config without attn_implementation uses the default.
      scan.sites.push_back(Site{site_name(path), "", default_implementation, config.origin(path), true});
    }
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      const std::string child = join(path, key);
      if (is_runtime_section(child)) continue;
      check_spelling(key, child);
      visit(kv.second, child, key);
    }
  }
};

// A relative path value names a plugin beside the config file that wrote it, as plugin_dirs and
// workload.file do, so that a config finds its plugin from any working directory; made absolute
// here, it stays a path by the value rule. A path given on the command line (an override) is the
// shell's: relative to the working directory, left as it is.
std::string anchor_path(const std::string& value, const Origin& origin) {
  if (value.empty() || value.front() == '/' || value.front() == '~') return value;
  if (classify_value(value).form != ValueForm::kPath) return value;
  if (!origin.override.empty() || origin.file.empty() || origin.file.front() == '<') return value;
  const std::filesystem::path dir = std::filesystem::absolute(std::filesystem::path(origin.file).parent_path());
  return (dir / value).lexically_normal().string();
}

}  // namespace

SiteScan find_sites(const Config& config, const Deprecations& deprecations, const std::string& default_implementation) {
  Scanner s{config, deprecations, default_implementation, {}, {kImplementationKey, kOverrideConfigKey}};
  for (const auto& [key, dep] : deprecations.keys) s.known_keys.push_back(key);
  s.visit(config.root(), "", "");
  for (Site& site : s.scan.sites) {
    // An implicit site's value is attnrt.default_implementation, from wherever that was set.
    site.value = anchor_path(site.value, site.implicit ? config.origin("attnrt.default_implementation") : site.origin);
  }
  return s.scan;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t subst = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const std::string& k : known) {
    if (k == word) return "";
    const size_t limit = std::max<size_t>(2, k.size() / 5);
    // The distance is at least the difference in length: a long key (up to 4 KiB, and met once
    // per alias that repeats it) costs nothing here instead of len x len steps per known key.
    if (word.size() > k.size() + limit || k.size() > word.size() + limit) continue;
    const size_t d = edit_distance(word, k);
    if (d <= limit && d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace attnrt
