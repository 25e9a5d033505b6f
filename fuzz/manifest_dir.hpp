// A plugin folder for the manifest targets: made once per process under $TMPDIR (tools/fuzz.sh
// points it into build-fuzz/run/<target>/), holding one empty lib*.so, the library a manifest
// without `library` gets (manifest.hpp); removed when the process exits normally.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace attnrt::fuzz {

inline const std::filesystem::path& plugin_dir() {
  // Never destroyed, so that the exit handler below can still read it.
  static const std::filesystem::path* dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/attnrt_fuzz_manifest.XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    std::ofstream(std::filesystem::path(pattern) / "libattnrt_fuzzed.so") << "not loaded\n";
    auto* made = new std::filesystem::path(pattern);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(plugin_dir(), ec);
    });
    return made;
  }();
  return *dir;
}

}  // namespace attnrt::fuzz
