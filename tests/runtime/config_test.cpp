// Layered YAML configuration and positions in messages.
#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/settings.hpp>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace attnrt {
namespace {

using test::TempDir;

TEST(Config, RecordsFileLineColumnOfEveryKey) {
  TempDir dir;
  const auto file = dir.write("c.yaml", "a:\n  b:\n    c: 1\n  d: [1, 2]\n");
  const Config c = Config::from_file(file);
  EXPECT_EQ(c.origin("a.b.c").describe(), file.string() + ":3:5");
  EXPECT_EQ(c.origin("a.d").describe(), file.string() + ":4:3");
  EXPECT_EQ(c.at("a.b.c").as<int>(), 1);
  EXPECT_FALSE(c.at("a.x"));
  EXPECT_FALSE(c.at("a.b.c.deeper"));
}

TEST(Config, ParseErrorNamesFileLineColumn) {
  TempDir dir;
  const auto file = dir.write("bad.yaml", "a:\n  b: [1, 2\n  c: 3\n");
  try {
    Config::from_file(file);
    FAIL() << "expected a parse error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(file.string() + ":", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find(":3:"), std::string::npos) << e.what();
  }
}

TEST(Config, TopLevelMustBeAMapping) { EXPECT_THROW(Config::from_string("- a\n- b\n", "list.yaml"), Error); }

TEST(Config, MissingFileIsAnError) { EXPECT_THROW(Config::from_file("/nonexistent/attnrt.yaml"), Error); }

TEST(Config, LaterLayersWinAndMappingsMerge) {
  Config base = Config::from_string("a: {x: 1, y: 2}\nlist: [1, 2, 3]\n", "base.yaml");
  const Config upper = Config::from_string("a: {y: 20, z: 30}\nlist: [9]\n", "upper.yaml");
  base.merge(upper);
  EXPECT_EQ(base.at("a.x").as<int>(), 1);
  EXPECT_EQ(base.at("a.y").as<int>(), 20);
  EXPECT_EQ(base.at("a.z").as<int>(), 30);
  EXPECT_EQ(base.at("list").size(), 1u) << "sequences are replaced, not merged";
  EXPECT_EQ(base.origin("a.y").file, "upper.yaml");
  EXPECT_EQ(base.origin("a.x").file, "base.yaml");
}

TEST(Config, MergeDoesNotAliasTheUpperLayer) {
  Config base = Config::from_string("a: 1\n", "base.yaml");
  Config upper = Config::from_string("b: {c: 2}\n", "upper.yaml");
  base.merge(upper);
  base.apply_override("b.c=5");
  EXPECT_EQ(upper.at("b.c").as<int>(), 2);
}

TEST(Settings, ReadsTheAttnrtSection) {
  const Config c = Config::from_string(
      "attnrt:\n  strict: true\n  num_threads: 3\n  fallback:\n    cpu: [eager]\n    cuda_sm90: [x, y]\n", "s.yaml");
  std::vector<std::string> warnings;
  const Settings s = read_settings(c, &warnings);
  EXPECT_TRUE(s.strict);
  EXPECT_EQ(s.num_threads, 3);
  DeviceInfo cpu;
  EXPECT_EQ(s.fallback_chain(cpu), std::vector<std::string>{"eager"});
  DeviceInfo h100;
  h100.dl = DLDevice{kDLCUDA, 0};
  h100.cuda_arch = 90;
  EXPECT_EQ(s.fallback_chain(h100), (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(warnings.empty());
}

TEST(Settings, MisspelledSettingGetsDidYouMeanWithPosition) {
  const Config c = Config::from_string("attnrt:\n  stirct: true\n", "s.yaml");
  std::vector<std::string> warnings;
  const Settings s = read_settings(c, &warnings);
  EXPECT_FALSE(s.strict);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("s.yaml:2:3"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("did you mean 'strict'"), std::string::npos) << warnings[0];
}

TEST(Settings, WrongTypeNamesThePosition) {
  const Config c = Config::from_string("attnrt:\n  strict: maybe\n", "s.yaml");
  try {
    read_settings(c, nullptr);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("s.yaml:2:3"), std::string::npos) << e.what();
  }
}

TEST(Settings, RelativePluginDirsResolveAgainstTheirFile) {
  TempDir dir;
  const auto file = dir.write("sub/c.yaml", "attnrt:\n  plugin_dirs: [plugins, /abs]\n");
  const Settings s = read_settings(Config::from_file(file), nullptr);
  ASSERT_EQ(s.plugin_dirs.size(), 2u);
  EXPECT_EQ(s.plugin_dirs[0], file.parent_path() / "plugins");
  EXPECT_EQ(s.plugin_dirs[1], std::filesystem::path("/abs"));
}

}  // namespace
}  // namespace attnrt
