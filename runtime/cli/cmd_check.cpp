// attnrt check PLUGIN [--json] [--junit FILE] [--timeout S]: the conformance kit (runtime/harness/src/check).
#include "commands.hpp"
#include "options.hpp"
#include "table.hpp"

#include <attnrt/harness/conformance.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/runtime.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace attnrt::cli {

int check_command(const CommonArgs& args) {
  if (args.positional.empty())
    throw Error("attnrt check needs a plugin: a name, a .so path, a plugin directory or org/name");
  CommonArgs rest = args;
  const std::string plugin = rest.positional.front();
  rest.positional.erase(rest.positional.begin());
  Runtime rt(runtime_options(rest));  // for plugin_dirs and the search path
  use_config_log_level(rt);
  ConformanceOptions options;
  if (args.timeout > 0) options.timeout_seconds = args.timeout;
  const ConformanceReport report = run_conformance(plugin, rt.registry(), options);

  if (!args.junit.empty()) {
    std::ofstream out(args.junit);
    if (!out) throw Error("cannot write JUnit XML to '" + args.junit + "'");
    out << to_junit_xml(report);
  }
  if (args.json) {
    nlohmann::json j{{"plugin", report.plugin},
                     {"library", report.library},
                     {"passed", report.passed()},
                     {"checks", nlohmann::json::array()}};
    for (const auto& c : report.checks) {
      j["checks"].push_back({{"name", c.name},
                             {"result", status_word(c.status)},
                             {"detail", c.detail},
                             {"seconds", c.seconds},
                             {"limit_seconds", c.limit_seconds}});
    }
    std::puts(j.dump(2).c_str());
  } else {
    fmt::print("attnrt check {} ({})\n\n", report.plugin, report.library);
    Table table({"CHECK", "RESULT", "SECONDS", "DETAIL"});
    for (const auto& c : report.checks)
      table.add(
          {c.name, status_word(c.status), c.limit_seconds > 0 ? fmt::format("{:.2f}", c.seconds) : "-", c.detail});
    table.print();
    fmt::print("\n{} passed, {} failed, {} skipped\n", report.count(CheckResult::Status::kPass),
               report.count(CheckResult::Status::kFail), report.count(CheckResult::Status::kSkip));
    if (options.timeout_seconds > 0) {
      fmt::print("time limit per check: {:g} s (--timeout)\n", options.timeout_seconds);
    } else {
      fmt::print(
          "time limit per check: {:g} s + {:g} x eager's time on the same calls, plus the check's time in the "
          "kit's own code (--timeout S sets a fixed one)\n",
          ConformanceOptions::kFloorSeconds, ConformanceOptions::kEagerFactor);
    }
  }
  return report.passed() ? 0 : 1;
}

}  // namespace attnrt::cli
