// attnrt resolve [CONFIG] [OVERRIDES...] [--json]: which backend each attention site gets for
// the config's workload on this machine, and every reason a candidate was passed over. A site
// with flex_attention mods (attnrt.flex.<site>) resolves with its flex block attached, as
// `attnrt run` calls it, so the two name the same backend.
#include "commands.hpp"
#include "options.hpp"
#include "table.hpp"

#include <attnrt/harness/flex_config.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/runtime.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace attnrt::cli {

nlohmann::json resolution_json(const Resolution& r) {
  nlohmann::json attempts = nlohmann::json::array();
  for (const Attempt& a : r.attempts) attempts.push_back({{"candidate", a.candidate}, {"rejected_because", a.reason}});
  return {{"site", r.site},       {"requested", r.requested}, {"normalized", r.normalized},
          {"device", r.device},   {"chosen", r.chosen},       {"fell_back", r.fell_back},
          {"attempts", attempts}, {"notes", r.notes},         {"error", r.error}};
}

std::string rejected_summary(const Resolution& r) {
  std::string s;
  for (const Attempt& a : r.attempts) {
    if (!a.reason.empty()) s += (s.empty() ? "" : "; ") + shorten_for_message(a.candidate) + ": " + a.reason;
  }
  return s.empty() ? "-" : s;
}

int resolve_command(const CommonArgs& args) {
  Runtime rt(runtime_options(args));
  use_config_log_level(rt);
  const WorkloadSpec spec = read_workload(rt.config(), Runtime::data_dir(), nullptr);
  Workload workload = make_workload(spec);
  if (rt.sites().sites.empty())
    throw Error("the configuration has no attention site (no attn_implementation or override_config)");

  std::vector<std::string> site_names;
  for (const Site& site : rt.sites().sites) site_names.push_back(site.name);
  const FlexSpecs flex_specs = read_flex(rt.config(), site_names);

  nlohmann::json j = nlohmann::json::array();
  Table table({"SITE", "REQUESTED", "FROM", "DEVICE", "CHOSEN", "REJECTED (REASON)"});
  int failures = 0;
  for (const Site& site : rt.sites().sites) {
    attnrt_attention_desc desc = workload.desc;
    std::unique_ptr<FlexCall> flex;  // owns what the attached block points at
    Resolution r;
    if (auto it = flex_specs.find(site.name); it != flex_specs.end()) {
      try {
        flex = std::make_unique<FlexCall>(it->second, workload);
        rt.resolver().bind_device(desc);
        flex->attach(desc, desc.device);
      } catch (const Error& e) {
        r.site = site.name;
        r.requested = site.value;
        r.error = e.what();
      }
    }
    if (r.error.empty()) r = rt.resolver().resolve(site.name, site.value, desc);
    const std::string from = site.implicit ? "default_implementation" : site.origin.describe();
    table.add({site.name, shorten_for_message(site.value), from, r.device, r.ok() ? r.chosen : "(none)",
               rejected_summary(r)});
    nlohmann::json e = resolution_json(r);
    e["from"] = from;
    j.push_back(e);
    if (!r.ok()) ++failures;
  }
  if (args.json) {
    std::puts(j.dump(2).c_str());
  } else {
    table.print();
  }
  for (const auto& e : j) {
    if (!e["error"].get<std::string>().empty()) fmt::print(stderr, "error: {}\n", e["error"].get<std::string>());
  }
  return failures ? 1 : 0;
}

}  // namespace attnrt::cli
