# Writes a C++ source holding configs/*.yaml as string literals (run by CMake at build time).
# Inputs: CONFIG_DIR, OUTPUT, NAMES (comma-separated file names).
string(REPLACE "," ";" NAMES "${NAMES}")
set(body "")
foreach(name IN LISTS NAMES)
  file(READ "${CONFIG_DIR}/${name}" text)
  string(APPEND body "    {\"${name}\", R\"attnrt_yaml(${text})attnrt_yaml\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from configs/ by runtime/src/api/embed_configs.cmake; do not edit.
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/runtime.hpp>

#include <map>

namespace attnrt {

std::string_view embedded_config(std::string_view name) {
  static const std::map<std::string_view, std::string_view> configs = {
${body}  };
  auto it = configs.find(name);
  if (it == configs.end()) throw Error(\"no embedded config named '\" + std::string(name) + \"'\");
  return it->second;
}

}  // namespace attnrt
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
