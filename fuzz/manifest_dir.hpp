// A plugin folder for the manifest targets: made once per process under $TMPDIR, holding one
// empty lib*.so, the library a manifest without `library` gets (manifest.hpp).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace attnrt::fuzz {

inline const std::filesystem::path& plugin_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/attnrt_fuzz_manifest.XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    std::ofstream(std::filesystem::path(pattern) / "libattnrt_fuzzed.so") << "not loaded\n";
    return std::filesystem::path(pattern);
  }();
  return dir;
}

}  // namespace attnrt::fuzz
