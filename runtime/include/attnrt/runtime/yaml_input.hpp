// YAML from outside the program (config files, overrides, plugin manifests, rule files), read
// with documented limits and YAML 1.2's rules that yaml-cpp does not enforce. Each limit is a
// clear error naming the file, line and column:
//   - a file of at most kMaxYamlFileBytes (1 MiB);
//   - valid UTF-8 throughout (a BOM is allowed);
//   - nesting at most kMaxYamlDepth (64) mappings and lists deep;
//   - each scalar (key or value) at most kMaxYamlValueBytes (4 KiB);
//   - at most kMaxYamlNodes (1,000,000) nodes with every alias expanded (a "billion laughs"
//     file of nested aliases is refused instead of exhausting memory);
//   - no key twice in one mapping (YAML 1.2, section 3.2.1.1); the error names both positions;
//   - keys are plain values (scalars), never a mapping, a list or an alias;
//   - no alias inside the node its anchor names (a cycle).
#pragma once

#include <attnrt/runtime/export.hpp>

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <filesystem>
#include <string>

namespace attnrt {

inline constexpr std::size_t kMaxYamlFileBytes = std::size_t{1} << 20;
inline constexpr int kMaxYamlDepth = 64;
inline constexpr std::size_t kMaxYamlValueBytes = 4096;
inline constexpr std::size_t kMaxYamlNodes = 1000000;

// Parses the first document of `text`; `name` starts every message ("configs/x.yaml:3:5: ...").
// A file of nothing but comments gives a null node. Throws attnrt::Error.
ATTNRT_API YAML::Node load_yaml(const std::string& text, const std::string& name);
// The same for a file, whose size is checked before it is read.
ATTNRT_API YAML::Node load_yaml_file(const std::filesystem::path& path);
// Reads a file of at most kMaxYamlFileBytes into a string (for load_yaml).
ATTNRT_API std::string read_yaml_file(const std::filesystem::path& path);

// A value as messages show it: whole up to 80 bytes, else its first 60 bytes (never cutting a
// UTF-8 character) and "... (N bytes)", so a huge value is never echoed whole.
ATTNRT_API std::string shorten_for_message(const std::string& value);

// The first position in `text` where it is not valid UTF-8 (overlong forms, surrogates and code
// points above U+10FFFF are invalid), as a 0-based byte offset; npos when it all is.
ATTNRT_API std::size_t invalid_utf8_offset(const std::string& text);

}  // namespace attnrt
