// attnrt.context_parallel (settings.hpp, issue 20): read and checked with positions, as every
// other attnrt.* key is. Unlike an unknown top-level setting (a warning), an unknown key inside
// it is an error: a misspelt `size` would leave a distributed job computing on one rank while
// its host expects a ring.
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/settings.hpp>
#include <attnrt/runtime/sites.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace attnrt {
namespace {

// Far more ranks than any ring runs (Megatron-LM's largest published CP degree is 32); a bound
// keeps a typo such as 40000 from reaching a host that allocates per rank.
constexpr int kMaxRanks = 1 << 16;

const std::vector<std::string>& context_parallel_keys() {
  static const std::vector<std::string> keys = {"size", "layout", "sites"};
  return keys;
}

}  // namespace

ContextParallelSetting read_context_parallel(const Config& config, const std::string& path, const YAML::Node& node) {
  ContextParallelSetting s;
  s.where = config.origin(path).describe();
  if (!node.IsMap()) {
    throw Error(fmt::format("{}: '{}' must be a mapping such as {{size: 2, layout: zigzag}}", s.where, path));
  }
  bool has_size = false;
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const std::string at = config.origin(path + "." + key).describe();
    const YAML::Node& v = kv.second;
    if (key == "size") {
      int size = 0;
      try {
        size = v.as<int>();
      } catch (const YAML::Exception&) {
        throw Error(fmt::format("{}: {}.size must be a whole number of ranks, got '{}'", at, path,
                                shorten_for_message(v.IsScalar() ? v.Scalar() : "(not a scalar)")));
      }
      if (size < 1 || size > kMaxRanks) {
        throw Error(fmt::format("{}: {}.size must be between 1 and {}, got {}", at, path, kMaxRanks, size));
      }
      s.size = size;
      has_size = true;
    } else if (key == "layout") {
      const std::string layout = v.IsScalar() ? v.Scalar() : "";
      if (layout != "zigzag" && layout != "contiguous") {
        throw Error(fmt::format("{}: {}.layout '{}' is not zigzag or contiguous", at, path,
                                shorten_for_message(v.IsScalar() ? layout : "(not a scalar)")));
      }
      s.layout = layout;
    } else if (key == "sites") {
      if (!v.IsSequence()) throw Error(fmt::format("{}: {}.sites must be a list of attention site names", at, path));
      for (const auto& item : v) {
        if (!item.IsScalar() || item.Scalar().empty()) {
          throw Error(fmt::format("{}: {}.sites must be a list of attention site names", at, path));
        }
        s.sites.push_back(item.Scalar());
      }
    } else {
      const std::string guess = closest_match(key, context_parallel_keys());
      throw Error(fmt::format("{}: unknown key '{}.{}'{} ({} takes size, layout and sites)", at, path,
                              shorten_for_message(key), guess.empty() ? "" : "; did you mean '" + guess + "'?", path));
    }
  }
  if (!has_size) throw Error(fmt::format("{}: {} needs a size (the number of ranks)", s.where, path));
  return s;
}

void check_context_parallel_sites(const ContextParallelSetting& setting, const std::vector<std::string>& site_names) {
  for (const std::string& site : setting.sites) {
    if (std::find(site_names.begin(), site_names.end(), site) != site_names.end()) continue;
    const std::string guess = closest_match(site, site_names);
    throw Error(
        fmt::format("{}: attnrt.context_parallel.sites names '{}', which is no attention site of the "
                    "configuration{} (sites: {})",
                    setting.where, shorten_for_message(site), guess.empty() ? "" : "; did you mean '" + guess + "'?",
                    site_names.empty() ? "none" : fmt::format("{}", fmt::join(site_names, ", "))));
  }
}

ContextParallelSetting Settings::context_parallel_for(const std::string& site) const {
  const auto& sites = context_parallel.sites;
  if (sites.empty() || std::find(sites.begin(), sites.end(), site) != sites.end()) return context_parallel;
  return ContextParallelSetting{};
}

}  // namespace attnrt
