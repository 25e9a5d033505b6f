// The `append-kv` check of `attnrt check` (append_check.cpp), declared for the runner.
#pragma once

#include <filesystem>
#include <string>

namespace attnrt::check {

// append-kv (ABI 1.2): a plugin that advertises ATTNRT_FEATURE_APPEND_KV writes every token of a
// shuffled slot mapping to its slot, skips negative (padding) slots, writes nothing else, and
// refuses a slot outside the cache as an invalid argument naming slot_mapping. Skipped, saying
// why, for plugins of ABI < 1.2 (never sent an append) and those that do not advertise it.
std::string check_append_kv(const std::filesystem::path& lib);

}  // namespace attnrt::check
