// Every plugin .so exports exactly one symbol: attnrt_plugin_entry (the ABI's promise; checked
// with nm on the built libraries).
#include <gtest/gtest.h>

#include <filesystem>

#include "test_support.hpp"

namespace attnrt {
namespace {

std::string defined_dynamic_symbols(const std::filesystem::path& so) {
  const std::string cmd = "nm -D --defined-only '" + so.string() + "' 2>&1";
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  char buf[512];
  while (pipe && fgets(buf, sizeof buf, pipe)) out += buf;
  if (pipe) pclose(pipe);
  return out;
}

TEST(Exports, EachPluginExportsOnlyItsEntryPoint) {
  if (std::system("nm --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "nm (binutils) is not installed";
  std::vector<std::filesystem::path> libs;
  for (const auto& dir : {test::plugins_dir(), test::fixtures() / "plugins"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
      if (e.path().extension() == ".so") libs.push_back(e.path());
    }
  }
  ASSERT_GE(libs.size(), 3u) << "eager, sdpa and the C fixture";
  for (const auto& so : libs) {
    const std::string syms = defined_dynamic_symbols(so);
    int lines = 0;
    for (char c : syms) lines += c == '\n';
    EXPECT_EQ(lines, 1) << so << ":\n" << syms;
    EXPECT_NE(syms.find(" T attnrt_plugin_entry"), std::string::npos) << so << ":\n" << syms;
  }
}

}  // namespace
}  // namespace attnrt
