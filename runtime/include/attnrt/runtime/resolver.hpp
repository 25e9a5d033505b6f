// Resolution: from a site's attn_implementation value to a backend that can honour the call.
//
// Value forms, told apart by rule (never by guessing):
//   starts with '/', './', '../' or '~', or ends in '.so'  -> a path (file or plugin directory)
//   org/name or org/name@version                          -> a hub name under the search path
//   "auto"                                                -> the device's fallback chain
//   any other value with a '/' (a/b/c, a/.., org/), or a NUL byte -> invalid, with the reason
//   anything else                                         -> a registered name or alias
// A hub name's org and name are single folder names, neither '.' nor '..', so <dir>/<org>/<name>
// never leaves the plugin folder it is looked up in.
// Candidates are the request, then the device's fallback chain. Each is checked (known-issue
// rules, installed, loadable, ABI, device, per-call support query); every rejection is logged
// as a WARNING with its reason and the choice as INFO. With strict, any fallback is an error
// that lists every reason. A feature of the call is never dropped to make a backend fit.
//
// Threads: resolve() and the const members may run on several threads at once. One Backend
// (one plugin instance) per library serves every resolution that picks it: created by the
// first, under a lock, and shared, its forward and backward callable concurrently (backend.hpp).
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/device.hpp>
#include <attnrt/runtime/export.hpp>
#include <attnrt/runtime/registry.hpp>
#include <attnrt/runtime/rules.hpp>
#include <attnrt/runtime/settings.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace attnrt {

enum class ValueForm { kAuto, kName, kPath, kHub, kInvalid };

struct ParsedValue {
  ValueForm form = ValueForm::kName;
  std::string text;                // the value (after alias rewriting)
  std::string org, name, version;  // hub form
  std::string problem;             // kInvalid: why the value is none of the forms
};

ATTNRT_API ParsedValue classify_value(const std::string& value);

struct Attempt {
  std::string candidate;  // name, path or org/name
  std::string reason;     // why it was rejected; empty for the chosen one
};

struct Resolution {
  std::string site;
  std::string requested;             // as written in the config
  std::string normalized;            // after deprecated-alias rewriting
  std::string device;                // "cpu", "cuda:0 (sm_90)"
  std::vector<Attempt> attempts;     // in order; the last is the choice when ok()
  std::vector<std::string> notes;    // deprecations and known-issue warnings
  std::shared_ptr<Backend> backend;  // null when resolution failed
  std::string chosen;                // backend name
  std::string description;           // the chosen plugin's one-line description
  bool fell_back = false;            // chosen is not what was requested (auto never falls back)
  std::string error;                 // set when resolution failed
  // attnrt.context_parallel for this site (size 1: off): the host runs the chosen backend as a
  // ring over this many ranks (context_parallel.hpp; from C, attnrt_ring).
  ContextParallelSetting context_parallel;

  bool ok() const { return backend != nullptr; }
};

class ATTNRT_API Resolver {
 public:
  Resolver(Registry& registry, Settings settings, Deprecations deprecations, std::vector<KnownIssueRule> rules,
           DeviceInfo device);

  // Resolves one site. Never throws for an unusable candidate; the Resolution says why.
  Resolution resolve(const std::string& site, const std::string& value, const attnrt_attention_desc& desc);

  // The descriptor's device fields filled for this resolver's device.
  void bind_device(attnrt_attention_desc& desc) const;
  const DeviceInfo& device() const { return device_; }
  const Settings& settings() const { return settings_; }

 private:
  // A backend for a candidate, or the reason there is none.
  std::shared_ptr<Backend> backend_for(const std::string& candidate, const ParsedValue& form, std::string* reason);
  std::shared_ptr<Backend> backend_for_record(const PluginRecord& record, std::string* reason);
  std::string rule_check(const std::string& candidate, const std::string& requested, const attnrt_attention_desc& desc,
                         std::vector<std::string>* notes) const;

  Registry& registry_;
  Settings settings_;
  Deprecations deprecations_;
  std::vector<KnownIssueRule> rules_;
  DeviceInfo device_;
  std::mutex backends_mutex_;
  std::map<std::string, std::shared_ptr<Backend>> backends_;  // by library path, under backends_mutex_
};

}  // namespace attnrt
