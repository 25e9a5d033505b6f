// Hydra's command-line override grammar (https://hydra.cc/docs/advanced/override_grammar/basic):
//   key.path=value    set an existing key (error if absent: "use +key.path=value to add it")
//   +key.path=value   add a key (error if present: "use ++ to override")
//   ++key.path=value  add or override
//   ~key.path[=value] delete a key (if value is given it must match)
// Values are parsed as YAML ("eager", 3, [1, 2], {a: 1}, null). Errors quote the override.
#pragma once

#include <attnrt/runtime/export.hpp>

#include <string>

namespace attnrt {

struct Override {
  enum class Kind { kSet, kAdd, kForce, kDelete };
  Kind kind = Kind::kSet;
  std::string key;    // dotted path
  std::string value;  // raw YAML text; empty for a bare delete
  bool has_value = false;
  std::string text;  // the override as written
};

// Parses one override; throws attnrt::Error naming the text and what is wrong.
ATTNRT_API Override parse_override(const std::string& text);

}  // namespace attnrt
