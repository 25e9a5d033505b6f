// Attention sites: every place in a configuration that chooses an attention implementation.
//  - any mapping key `attn_implementation` (HF / VERL `override_config.attn_implementation`);
//  - an `override_config` mapping without one (VERL's model blocks): the site takes
//    `attnrt.default_implementation`;
//  - deprecated keys in place of `attn_implementation` (`use_flash_attention`,
//    `attention_backend`, ...), rewritten with a deprecation warning.
// Each site is resolved on its own. Keys that look like misspellings of these get a "did you
// mean" warning with their file:line:column. A relative path value (`./my_plugin`,
// `../build/lib/attnrt/plugins/sdpa`, `libx.so`) set in a config file is relative to that file's
// folder; one set by a command-line override, to the working directory.
#pragma once

#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/export.hpp>
#include <attnrt/runtime/rules.hpp>

#include <string>
#include <vector>

namespace attnrt {

struct Site {
  std::string name;      // "actor_rollout_ref.model", or "attn_implementation" at top level
  std::string key_path;  // dotted path of the key that set the value ("" when implicit)
  std::string value;     // as written (after deprecated-key rewriting); a relative path from a
                         // config file made absolute against that file's folder
  Origin origin;
  bool implicit = false;  // no key set: default_implementation applies
};

struct SiteScan {
  std::vector<Site> sites;
  std::vector<std::string> warnings;  // deprecations and "did you mean", with positions
};

ATTNRT_API SiteScan find_sites(const Config& config, const Deprecations& deprecations,
                               const std::string& default_implementation);

// Levenshtein distance, used for "did you mean".
ATTNRT_API size_t edit_distance(const std::string& a, const std::string& b);
// The closest of `known` to `word` within a small distance, or "".
ATTNRT_API std::string closest_match(const std::string& word, const std::vector<std::string>& known);

}  // namespace attnrt
