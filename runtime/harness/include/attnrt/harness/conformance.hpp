// `attnrt check`: the conformance kit every plugin is held to, whoever wrote it (in the spirit
// of ggml's test-backend-ops). Each check runs in a child process, so a plugin that crashes
// fails that check instead of taking the kit down.
//
// Checks: load; exports (exactly attnrt_plugin_entry); abi (versions, struct sizes, table);
// manifest (valid, matches the library); create; numerics/<device>/<dtype> (every advertised
// feature, forward, LSE and backward when advertised: error against the fp64 reference at most
// 2x the runtime's eager plugin's in the same dtype, and no bias); support-query (unadvertised
// features are refused with a reason, and forward refuses them too); bad-arguments/<mistake>
// (errors, not crashes, straight through the C table); threads (concurrent calls agree bit for
// bit with serial ones); deterministic (bit-identical repeats, when advertised); leaks (memory
// does not grow over a few hundred calls). Every check has a time limit derived from eager's
// time on the same calls (isolation.hpp, TimeLimit) unless one is given.
#pragma once

#include <attnrt/runtime/registry.hpp>

#include <string>
#include <vector>

namespace attnrt {

struct CheckResult {
  enum class Status { kPass, kFail, kSkip };
  std::string name;
  Status status = Status::kPass;
  std::string detail;
  double seconds = 0;
  double limit_seconds = 0;  // the time limit it ran under (0: it ran in no child of its own)
};

struct ConformanceReport {
  std::string plugin;   // as given
  std::string library;  // resolved library path
  std::vector<CheckResult> checks;
  bool passed() const;
  int count(CheckResult::Status s) const;
};

struct ConformanceOptions {
  // The default limit of each check: kFloorSeconds + kEagerFactor x the runtime's eager plugin's
  // time on the calls the check makes of the plugin, plus the check's time in the kit's own code.
  static constexpr double kFloorSeconds = 5;
  static constexpr double kEagerFactor = 20;

  int threads = 4;             // for the concurrency check
  double timeout_seconds = 0;  // per check; 0: the default above
};

// `plugin`: a registered name or alias, a .so path, a plugin directory, or org/name. Throws
// attnrt::Error only when `plugin` names nothing at all.
ConformanceReport run_conformance(const std::string& plugin, Registry& registry, const ConformanceOptions& options);

// JUnit XML (one testsuite, one testcase per check) for CI systems.
std::string to_junit_xml(const ConformanceReport& report);
const char* status_word(CheckResult::Status s);

// Names of the defined, exported dynamic symbols of an ELF shared object. Throws attnrt::Error
// for a file that is not a readable 64-bit ELF object.
std::vector<std::string> elf_exported_symbols(const std::filesystem::path& so);

}  // namespace attnrt
