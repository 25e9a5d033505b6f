#include "options.hpp"

#include <attnrt/runtime/error.hpp>

#include <spdlog/spdlog.h>

namespace attnrt::cli {
namespace {
bool g_level_from_command_line = false;
}  // namespace

void set_log_level_from_command_line(bool chosen) { g_level_from_command_line = chosen; }

void use_config_log_level(const Runtime& runtime) {
  if (g_level_from_command_line) return;
  const std::string& level = runtime.settings().log_level;
  spdlog::set_level(spdlog::level::from_str(level == "warning" ? "warn" : level));
}

RuntimeOptions runtime_options(const CommonArgs& args) {
  RuntimeOptions options;
  for (const std::string& a : args.positional) {
    const bool yaml_name =
        a.size() > 5 && (a.compare(a.size() - 5, 5, ".yaml") == 0 || a.compare(a.size() - 4, 4, ".yml") == 0);
    const bool is_override = a.find('=') != std::string::npos || (a.rfind("~", 0) == 0 && !yaml_name);
    if (!is_override && (yaml_name || std::filesystem::is_regular_file(a))) {
      options.config_files.emplace_back(a);
    } else if (is_override) {
      options.overrides.push_back(a);
    } else {
      throw Error("argument '" + a +
                  "' is neither a config file (.yaml) nor an override (key=value, +key=value, "
                  "++key=value, ~key)");
    }
  }
  return options;
}

}  // namespace attnrt::cli
