// Turns the CLI's positional arguments into RuntimeOptions: *.yaml / *.yml (or existing files)
// are config files, everything else is a Hydra override.
#pragma once

#include "commands.hpp"

#include <attnrt/runtime/runtime.hpp>

namespace attnrt::cli {

RuntimeOptions runtime_options(const CommonArgs& args);

}  // namespace attnrt::cli
