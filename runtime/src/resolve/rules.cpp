#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/rules.hpp>
#include <attnrt/validate.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace attnrt {
namespace {

std::string pos(const std::string& file, const YAML::Node& n) {
  return fmt::format("{}:{}:{}", file, n.Mark().line + 1, n.Mark().column + 1);
}

std::vector<std::string> string_list(const YAML::Node& n, const std::string& file, const char* key) {
  if (!n) return {};
  if (n.IsScalar()) return {n.as<std::string>()};
  if (!n.IsSequence()) throw Error(pos(file, n) + ": '" + key + "' must be a string or a list of strings");
  return n.as<std::vector<std::string>>();
}

bool listed(const std::vector<std::string>& list, const std::string& value) {
  return list.empty() || std::find(list.begin(), list.end(), value) != list.end();
}

}  // namespace

Deprecations Deprecations::from_yaml(const YAML::Node& root, const std::string& file) {
  Deprecations d;
  try {
    if (const YAML::Node aliases = root["aliases"]) {
      for (const auto& kv : aliases) d.aliases[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
    if (const YAML::Node keys = root["keys"]) {
      for (const auto& kv : keys) {
        DeprecatedKey k;
        k.key = kv.first.as<std::string>();
        const YAML::Node& v = kv.second;
        if (!v.IsMap()) throw Error(pos(file, v) + ": deprecated key '" + k.key + "' needs a mapping");
        k.boolean = v["boolean"] && v["boolean"].as<bool>();
        if (v["when_true"]) k.when_true = v["when_true"].as<std::string>();
        if (v["message"]) k.message = v["message"].as<std::string>();
        d.keys[k.key] = k;
      }
    }
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("{}:{}:{}: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  return d;
}

std::vector<std::string> features_in_use(const attnrt_attention_desc& d) {
  std::vector<std::string> f;
  if (d.causal) f.push_back("causal");
  if (d.window_left >= 0 || (!d.causal && d.window_right >= 0)) f.push_back("window");
  if (d.softcap > 0.0f) f.push_back("softcap");
  if (d.has_sinks) f.push_back("sinks");
  if (d.has_alibi) f.push_back("alibi");
  if (d.is_varlen) f.push_back("varlen");
  if (d.is_paged) f.push_back("paged");
  if (d.dropout_p > 0.0f) f.push_back("dropout");
  if (d.heads_q != d.heads_kv) f.push_back("gqa");
  return f;
}

bool KnownIssueRule::matches(const std::string& device, int32_t cuda_arch, const std::string& candidate,
                             const std::string& requested_value, const attnrt_attention_desc& desc) const {
  if (!listed(devices, device) || !listed(implementations, candidate) || !listed(requested, requested_value))
    return false;
  if (!listed(dtypes, sdk::dtype_name(desc.dtype))) return false;
  if (device == "cuda" &&
      ((min_cuda_arch && cuda_arch < min_cuda_arch) || (max_cuda_arch && cuda_arch > max_cuda_arch)))
    return false;
  if (desc.seqlen_k < min_seqlen_k) return false;
  const std::vector<std::string> in_use = features_in_use(desc);
  for (const std::string& f : features) {
    if (std::find(in_use.begin(), in_use.end(), f) == in_use.end()) return false;
  }
  return true;
}

std::vector<KnownIssueRule> parse_rules(const YAML::Node& root, const std::string& file) {
  static const std::vector<std::string> known_keys = {"devices",   "min_cuda_arch", "max_cuda_arch", "implementations",
                                                      "requested", "dtypes",        "features",      "min_seqlen_k"};
  std::vector<KnownIssueRule> rules;
  if (!root || root.IsNull()) return rules;  // an empty file
  // yaml-cpp's operator[] throws its own exception on a scalar (issue 19's fuzzing found it).
  if (!root.IsMap()) throw Error(pos(file, root) + ": a rule file must be a mapping with a 'rules' list");
  const YAML::Node list = root["rules"];
  if (!list) return rules;
  if (!list.IsSequence()) throw Error(pos(file, list) + ": 'rules' must be a list");
  try {
    for (const YAML::Node& n : list) {
      KnownIssueRule r;
      r.origin = Origin{file, n.Mark().line + 1, n.Mark().column + 1, ""};
      if (!n["id"] || !n["message"]) throw Error(pos(file, n) + ": a rule needs 'id' and 'message'");
      r.id = n["id"].as<std::string>();
      r.message = n["message"].as<std::string>();
      const std::string action = n["action"] ? n["action"].as<std::string>() : "skip";
      if (action != "skip" && action != "warn")
        throw Error(pos(file, n["action"]) + ": action must be 'skip' or 'warn', got '" + action + "'");
      r.action = action == "skip" ? KnownIssueRule::Action::kSkip : KnownIssueRule::Action::kWarn;
      const YAML::Node m = n["match"];
      if (m) {
        for (const auto& kv : m) {
          const std::string key = kv.first.as<std::string>();
          if (std::find(known_keys.begin(), known_keys.end(), key) == known_keys.end()) {
            throw Error(pos(file, kv.first) + ": unknown match key '" + key + "'");
          }
        }
        r.devices = string_list(m["devices"], file, "devices");
        r.implementations = string_list(m["implementations"], file, "implementations");
        r.requested = string_list(m["requested"], file, "requested");
        r.dtypes = string_list(m["dtypes"], file, "dtypes");
        r.features = string_list(m["features"], file, "features");
        if (m["min_cuda_arch"]) r.min_cuda_arch = m["min_cuda_arch"].as<int32_t>();
        if (m["max_cuda_arch"]) r.max_cuda_arch = m["max_cuda_arch"].as<int32_t>();
        if (m["min_seqlen_k"]) r.min_seqlen_k = m["min_seqlen_k"].as<int64_t>();
      }
      rules.push_back(std::move(r));
    }
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("{}:{}:{}: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  return rules;
}

}  // namespace attnrt
