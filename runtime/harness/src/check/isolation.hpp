// Runs a check in a child process: a crash, abort or hang of the plugin becomes a failed
// check with the signal (or the timeout) named, and the kit carries on.
#pragma once

#include <attnrt/harness/conformance.hpp>

#include <functional>

namespace attnrt::check {

// The body returns its detail text for a pass, throws CheckFailed for a failure and
// CheckSkipped for a skip. Anything else thrown is a failure with its message.
struct CheckFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct CheckSkipped : std::runtime_error {
  using std::runtime_error::runtime_error;
};

CheckResult run_isolated(const std::string& name, const std::function<std::string()>& body, double timeout_seconds);

}  // namespace attnrt::check
