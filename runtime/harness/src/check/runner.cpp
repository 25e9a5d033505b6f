// run_conformance: which checks run, in what order, and which are skipped because an earlier
// one failed. Every check runs in its own child process (isolation.hpp).
#include "append_check.hpp"
#include "block_mask_check.hpp"
#include "checks.hpp"
#include "extension_check.hpp"
#include "fixtures.hpp"
#include "flex_check.hpp"
#include "isolation.hpp"

#include <attnrt/harness/conformance.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/plugin_library.hpp>
#include <attnrt/runtime/resolver.hpp>
#include <attnrt/validate.hpp>

#include <functional>
#include <string>

namespace attnrt {
namespace {

PluginRecord record_for(const std::string& plugin, Registry& registry) {
  // On the command line an existing file or folder is a path even without './' (in a config,
  // classify_value's rule alone decides).
  const ParsedValue v = classify_value(plugin);
  std::error_code ec;
  if (v.form == ValueForm::kPath || std::filesystem::exists(plugin, ec)) return registry.record_for_path(plugin);
  if (v.form == ValueForm::kInvalid) throw Error("'" + plugin + "': " + v.problem);
  if (v.form == ValueForm::kHub) {
    if (auto r = registry.find_hub(v.org, v.name, v.version)) return *r;
    throw Error("hub plugin '" + plugin + "' is not under the plugin search path");
  }
  if (const PluginRecord* r = registry.find(plugin)) return *r;
  throw Error("no plugin named '" + plugin + "' (give a name, a .so path, a plugin directory or org/name)");
}

// The runtime's own eager plugin (the folder next to libattnrt), else whatever `eager` the
// search path holds: the numerics checks' baseline and the time limits' yardstick. Empty when
// there is none.
std::filesystem::path eager_library(Registry& registry) {
  Registry builtin({Registry::builtin_plugin_dir()});
  for (Registry* r : {&builtin, &registry}) {
    if (const PluginRecord* record = r->find("eager", "cpu")) return record->library;
  }
  return {};
}

}  // namespace

ConformanceReport run_conformance(const std::string& plugin, Registry& registry, const ConformanceOptions& options) {
  using namespace check;
  const PluginRecord record = record_for(plugin, registry);
  const std::filesystem::path lib = record.library;
  ConformanceReport report;
  report.plugin = plugin;
  report.library = lib.string();
  const std::filesystem::path eager = eager_library(registry);
  TimeLimit limit;
  limit.fixed_seconds = options.timeout_seconds;
  auto run = [&](const std::string& name, const std::function<std::string()>& body) {
    report.checks.push_back(run_isolated(name, body, limit));
    return report.checks.back().status != CheckResult::Status::kFail;
  };

  const bool loads = run("load", [&] { return check_load(lib); });
  run("exports", [&] { return check_exports(lib); });
  if (!loads) {
    for (const char* name : {"abi", "manifest", "create", "numerics", "support-query", "extensions", "append-kv",
                             "flex", "block-mask", "bad-arguments", "threads", "deterministic", "leaks"}) {
      report.checks.push_back({name, CheckResult::Status::kSkip, "the plugin does not load", 0});
    }
    return report;
  }
  run("abi", [&] { return check_abi(lib); });
  run("manifest", [&] { return check_manifest(record); });
  const bool creates = run("create", [&] { return check_create(lib); });
  if (!creates) return report;

  const attnrt_capabilities caps = PluginLibrary::open(lib)->capabilities();  // plain data, no plugin code runs
  if (caps.devices & ATTNRT_DEVICE_BIT_CPU) {
    for (uint32_t bit : kDtypeBits) {
      if (!(caps.dtypes & bit)) continue;
      const attnrt_dtype dt = dtype_of_bit(bit);
      run(std::string("numerics/cpu/") + sdk::dtype_name(dt), [&] { return check_numerics(lib, dt, eager); });
    }
    run("support-query", [&] { return check_support_query(lib); });
    run("extensions", [&] { return check_unknown_extensions(lib); });
    run("append-kv", [&] { return check_append_kv(lib); });
    run("flex", [&] { return check_flex(lib); });
    run("block-mask", [&] { return check_block_mask(lib); });
    for (const char* mistake : kBadArgumentMistakes) {
      run(std::string("bad-arguments/") + mistake, [&] { return check_bad_argument(lib, mistake); });
    }
    run("threads", [&] { return check_threads(lib, options.threads, eager); });
    run("deterministic", [&] { return check_deterministic(lib, eager); });
    run("leaks", [&] { return check_leaks(lib, eager); });
  }
  if (caps.devices & ATTNRT_DEVICE_BIT_CUDA) {
    report.checks.push_back({"numerics/cuda", CheckResult::Status::kSkip,
                             "CUDA numerics are not run by attnrt check (its checks run in forked children, where "
                             "CUDA cannot be used once the parent has initialized it); the shipped CUDA plugins are "
                             "checked by attnrt_gpu_tests",
                             0});
  }
  return report;
}

}  // namespace attnrt
