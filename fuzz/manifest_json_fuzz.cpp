// A plugin folder's manifest, an HF-style config.json: JSON with the same limits (nlohmann-json's parser callback),
// through parse_manifest (what read_manifest does with the file's text): name, version, description, aliases, devices
// and library, the folder's only lib*.so when no library is named.
#include <attnrt/runtime/manifest.hpp>

#include "fuzz_support.hpp"
#include "manifest_dir.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnrt;
  const std::string text = fuzz::text_of(data, size);
  fuzz::expect_clean("parse_manifest", [&] {
    const Manifest m = parse_manifest(text, fuzz::plugin_dir() / "config.json");
    fuzz::check(!m.library.empty(), "an accepted manifest names its library");
  });
  return 0;
}
