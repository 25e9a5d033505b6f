// The conformance report: its counts and its JUnit XML form. The text table and the JSON are
// written by the CLI (runtime/cli/cmd_check.cpp), beside the other commands' output.
#include <attnrt/harness/conformance.hpp>

#include <fmt/format.h>

namespace attnrt {
namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

bool ConformanceReport::passed() const { return count(CheckResult::Status::kFail) == 0; }

int ConformanceReport::count(CheckResult::Status s) const {
  int n = 0;
  for (const auto& c : checks) n += c.status == s;
  return n;
}

const char* status_word(CheckResult::Status s) {
  return s == CheckResult::Status::kPass ? "PASS" : s == CheckResult::Status::kFail ? "FAIL" : "SKIP";
}

std::string to_junit_xml(const ConformanceReport& r) {
  double total = 0;
  for (const auto& c : r.checks) total += c.seconds;
  std::string x = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
      "  <testsuite name=\"attnrt check {}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n",
      xml_escape(r.plugin), r.checks.size(), r.count(CheckResult::Status::kFail), r.count(CheckResult::Status::kSkip),
      total);
  for (const auto& c : r.checks) {
    x += fmt::format("    <testcase classname=\"attnrt.check\" name=\"{}\" time=\"{:.3f}\"", xml_escape(c.name),
                     c.seconds);
    if (c.status == CheckResult::Status::kFail) {
      x += fmt::format(">\n      <failure message=\"{}\"/>\n    </testcase>\n", xml_escape(c.detail));
    } else if (c.status == CheckResult::Status::kSkip) {
      x += fmt::format(">\n      <skipped message=\"{}\"/>\n    </testcase>\n", xml_escape(c.detail));
    } else {
      x += "/>\n";
    }
  }
  return x + "  </testsuite>\n</testsuites>\n";
}

}  // namespace attnrt
