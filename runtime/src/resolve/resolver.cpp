#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/resolver.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include <fmt/format.h>

#include <algorithm>

#include "../log/log.hpp"

namespace attnrt {
namespace {

std::string join_dirs(const std::vector<std::filesystem::path>& dirs) {
  std::string s;
  for (const auto& d : dirs) s += (s.empty() ? "" : ", ") + d.string();
  return s.empty() ? "(no plugin directories)" : s;
}

std::string device_word(const DeviceInfo& d) { return d.dl.device_type == kDLCUDA ? "cuda" : "cpu"; }

}  // namespace

Resolver::Resolver(Registry& registry, Settings settings, Deprecations deprecations, std::vector<KnownIssueRule> rules,
                   DeviceInfo device)
    : registry_(registry),
      settings_(std::move(settings)),
      deprecations_(std::move(deprecations)),
      rules_(std::move(rules)),
      device_(std::move(device)) {}

void Resolver::bind_device(attnrt_attention_desc& desc) const {
  desc.device = device_.dl;
  desc.cuda_arch = device_.cuda_arch;
}

std::shared_ptr<Backend> Resolver::backend_for_record(const PluginRecord& record, std::string* reason) {
  const std::string key = std::filesystem::weakly_canonical(record.library).string();
  // Held while the first resolution to pick a library loads it and creates its instance: the
  // others wait for that one and share it.
  std::lock_guard<std::mutex> lock(backends_mutex_);
  if (auto it = backends_.find(key); it != backends_.end()) return it->second;
  try {
    auto backend = std::make_shared<Backend>(registry_.load(record));
    backends_[key] = backend;
    return backend;
  } catch (const Error& e) {
    *reason = e.what();
    return nullptr;
  }
}

std::shared_ptr<Backend> Resolver::backend_for(const std::string& candidate, const ParsedValue& form,
                                               std::string* reason) {
  switch (form.form) {
    case ValueForm::kPath: try { return backend_for_record(registry_.record_for_path(candidate), reason);
      } catch (const Error& e) {
        *reason = e.what();
        return nullptr;
      }
    case ValueForm::kHub: {
      std::optional<PluginRecord> r;
      try {
        r = registry_.find_hub(form.org, form.name, form.version);
      } catch (const Error& e) {
        *reason = e.what();
        return nullptr;
      }
      if (!r) {
        const std::string dir = form.org + "/" + form.name + (form.version.empty() ? "" : "@" + form.version);
        *reason = fmt::format(
            "hub plugin '{}' is not installed; attnrt never downloads plugins: put its folder (with "
            "plugin.yaml) at <plugin dir>/{} under one of: {}",
            shorten_for_message(candidate), shorten_for_message(dir), join_dirs(registry_.search_dirs()));
        return nullptr;
      }
      return backend_for_record(*r, reason);
    }
    case ValueForm::kInvalid: *reason = form.problem; return nullptr;
    case ValueForm::kAuto:
    case ValueForm::kName: break;
  }
  const PluginRecord* record = registry_.find(candidate, device_word(device_));
  if (record == nullptr) {
    *reason = fmt::format("not installed (no plugin named '{}' in {})", shorten_for_message(candidate),
                          join_dirs(registry_.search_dirs()));
    return nullptr;
  }
  return backend_for_record(*record, reason);
}

std::string Resolver::rule_check(const std::string& candidate, const std::string& requested,
                                 const attnrt_attention_desc& desc, std::vector<std::string>* notes) const {
  if (!settings_.known_issues) return "";
  for (const KnownIssueRule& rule : rules_) {
    if (!rule.matches(device_word(device_), device_.cuda_arch, candidate, requested, desc)) continue;
    if (rule.action == KnownIssueRule::Action::kSkip) {
      return fmt::format("known issue '{}' ({}): {}", rule.id, rule.origin.describe(), rule.message);
    }
    notes->push_back(fmt::format("known issue '{}' with {}: {}", rule.id, candidate, rule.message));
  }
  return "";
}

Resolution Resolver::resolve(const std::string& site, const std::string& value, const attnrt_attention_desc& in_desc) {
  attnrt_attention_desc desc = in_desc;
  bind_device(desc);
  Resolution res;
  res.site = site;
  res.requested = value;
  res.device = device_.label();
  res.normalized = value;
  res.context_parallel = settings_.context_parallel_for(site);
  if (auto it = deprecations_.aliases.find(value); it != deprecations_.aliases.end()) {
    res.normalized = it->second;
    res.notes.push_back(fmt::format("'{}' is a deprecated name; use '{}'", shorten_for_message(value), it->second));
  }
  const ParsedValue requested = classify_value(res.normalized);

  // Candidates: the request, then the device's chain (auto: the chain alone).
  std::vector<std::string> candidates;
  if (requested.form != ValueForm::kAuto) candidates.push_back(res.normalized);
  const bool chain_allowed = requested.form == ValueForm::kAuto || !settings_.strict;
  if (chain_allowed) {
    for (const std::string& c : settings_.fallback_chain(device_)) {
      if (std::find(candidates.begin(), candidates.end(), c) == candidates.end()) candidates.push_back(c);
    }
  }
  if (candidates.empty()) {
    res.error = fmt::format("{}: no fallback chain is configured for {} (attnrt.fallback)", site, res.device);
  }

  for (const std::string& name : res.notes) log::warn("{}: {}", site, name);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string& candidate = candidates[i];
    const ParsedValue form = classify_value(candidate);
    std::vector<std::string> notes;
    std::string reason = rule_check(candidate, res.normalized, desc, &notes);
    std::shared_ptr<Backend> backend;
    if (reason.empty()) backend = backend_for(candidate, form, &reason);
    if (backend) {
      reason = backend->unsupported_reason(desc);
      if (reason.empty()) {
        // A rule may name a plugin by its registered name while the request was a path.
        std::vector<std::string> more;
        reason = rule_check(backend->name(), res.normalized, desc, &more);
        notes.insert(notes.end(), more.begin(), more.end());
      }
    }
    for (const std::string& n : notes) {
      log::warn("{}: {}", site, n);
      res.notes.push_back(n);
    }
    if (!reason.empty() || !backend) {
      res.attempts.push_back({candidate, reason});
      const bool last = i + 1 == candidates.size();
      log::warn("{}: {} {} on {}: {}.{}", site, shorten_for_message(candidate),
                i == 0 && requested.form != ValueForm::kAuto ? "requested but not usable" : "not usable", res.device,
                reason, last ? "" : fmt::format(" Falling back to '{}'", candidates[i + 1]));
      continue;
    }
    res.attempts.push_back({candidate, ""});
    res.backend = backend;
    res.chosen = backend->name();
    res.description = backend->library().api().description ? backend->library().api().description : "";
    res.fell_back = requested.form != ValueForm::kAuto && i > 0;
    log::info("{}: attention backend: {} ({}) on {}{}", site, res.chosen, res.description, res.device,
              res.fell_back ? fmt::format(", falling back from '{}'", shorten_for_message(res.normalized)) : "");
    return res;
  }

  std::string reasons;
  for (const Attempt& a : res.attempts)
    reasons += fmt::format("\n  - {}: {}", shorten_for_message(a.candidate), a.reason);
  if (settings_.strict && requested.form != ValueForm::kAuto) {
    res.error = fmt::format("{}: strict mode: '{}' cannot be used on {} and fallback is disabled (attnrt.strict):{}",
                            site, shorten_for_message(res.normalized), res.device, reasons);
  } else if (res.error.empty()) {
    res.error = fmt::format("{}: no attention backend can run this call on {}:{}", site, res.device, reasons);
  }
  return res;
}

}  // namespace attnrt
