// Turns the CLI's positional arguments into RuntimeOptions: *.yaml / *.yml (or existing files)
// are config files, everything else is a Hydra override.
#pragma once

#include "commands.hpp"

#include <attnrt/runtime/runtime.hpp>

namespace attnrt::cli {

RuntimeOptions runtime_options(const CommonArgs& args);

// The config's attnrt.log_level becomes the CLI's level, unless --log-level or -v chose one:
// messages printed while the config was being read used the command line's (or the default).
void use_config_log_level(const Runtime& runtime);
// Set by main() when the command line chose the level.
void set_log_level_from_command_line(bool chosen);

}  // namespace attnrt::cli
