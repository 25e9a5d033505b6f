// The `flex` check of `attnrt check` (flex_check.cpp), declared for the runner.
#pragma once

#include <filesystem>
#include <string>

namespace attnrt::check {

// flex (ABI 1.3's flex_attention block, plugin_abi.h attnrt_flex_attention): a plugin that
// advertises ATTNRT_FEATURE_FLEX_ATTENTION computes, on the CPU, what the fp64 reference computes
// with the same mods: a mask_mod, a score_mod reading an aux tensor and a scalar (and its
// gradient through backward, when advertised), and a block mask whose skipped blocks are skipped
// though mask_mod would show them and whose full blocks are trusted though mask_mod would hide
// pairs in them. A plugin of ABI >= 1.3 that does not advertise it must refuse the block. Skipped
// for plugins of ABI < 1.3 (never sent one) and non-CPU plugins.
std::string check_flex(const std::filesystem::path& lib);

}  // namespace attnrt::check
