// The `block-mask` check of `attnrt check` (block_mask_check.cpp), declared for the runner.
#pragma once

#include <filesystem>
#include <string>

namespace attnrt::check {

// block-mask (ABI 1.4's create_block_mask, plugin_abi.h attnrt_block_mask_args): a CPU plugin
// that advertises ATTNRT_FEATURE_CREATE_BLOCK_MASK builds, from a mask_mod that reads an aux
// tensor and a scalar, the lists a C++ classification of every pair gives: per (b, h) and
// broadcast, with and without the full and transposed pairs, every entry past a count 0; with no
// mask_mod every block is full; a flex block that already carries a block mask is refused naming
// it. Skipped for plugins of ABI < 1.4, plugins without the feature, and non-CPU plugins.
std::string check_block_mask(const std::filesystem::path& lib);

}  // namespace attnrt::check
