// Runs a check in a child process: a crash, abort or hang of the plugin becomes a failed
// check with the signal (or the timeout) named, and the case the check was running when it
// happened, and the kit carries on.
#pragma once

#include <attnrt/harness/conformance.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace attnrt::check {

// The body returns its detail text for a pass, throws CheckFailed for a failure and
// CheckSkipped for a skip. Anything else thrown is a failure with its message.
struct CheckFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct CheckSkipped : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// How long a check may run. Fixed (`attnrt check --timeout`), or derived from eager: the floor
// plus `eager_factor` times what the runtime's eager plugin takes for the calls the check makes
// of the plugin (the check measures it on the same workloads and reports it: report_eager_time),
// plus the time the check spends in the kit's own code (the fp64 reference, eager itself:
// report_kit_time), which the plugin is not held to. The floor absorbs process start and a busy
// machine; the factor lets a plugin be much slower than a naive reference, but not hang.
struct TimeLimit {
  double fixed_seconds = 0;  // > 0: this limit, whatever the check reports
  double floor_seconds = ConformanceOptions::kFloorSeconds;
  double eager_factor = ConformanceOptions::kEagerFactor;
};

CheckResult run_isolated(const std::string& name, const std::function<std::string()>& body, const TimeLimit& limit);

// Called by a check's body (in the child; no-ops elsewhere), so that the parent can say what
// crashed or hung, and stretch a derived limit by the kit's own time.
void report_case(std::string_view what);  // "softcap: backward": what runs now
void report_kit_time(double seconds);     // seconds just spent in the kit's own code
void report_eager_time(double seconds);   // eager's seconds for calls the plugin makes too

// Seconds fn() takes.
template <class Fn>
double seconds_of(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace attnrt::check
