// Configuration from outside (issue 19): duplicate keys, nesting depth, file size, value length,
// UTF-8 and alias bombs each get a clear error with a position, and long values are shortened
// wherever a message shows them (runtime/include/attnrt/runtime/yaml_input.hpp).
#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/manifest.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

#include "test_support.hpp"

namespace attnrt {
namespace {

using test::TempDir;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string file_error(const std::string& text, std::string* path = nullptr) {
  static TempDir dir;
  const auto file = dir.write("c.yaml", text);
  if (path) *path = file.string();
  return error_of([&] { Config::from_file(file); });
}

TEST(ConfigLimits, DuplicateKeyNamesBothPositions) {
  std::string f;
  const std::string e = file_error(
      "actor_rollout_ref:\n  model:\n    override_config:\n      attn_implementation: eager\n"
      "      attn_implementation: sdpa\n",
      &f);
  EXPECT_EQ(e, f + ":5:7: duplicate key 'attn_implementation' (first at " + f +
                   ":4:7); YAML 1.2 allows a key once per mapping");
  // In a flow mapping, at the top level, and in an override's value.
  EXPECT_NE(file_error("a: {x: 1, y: 2, x: 3}\n").find(":1:17: duplicate key 'x' (first at "), std::string::npos);
  EXPECT_NE(file_error("a: 1\nb: 2\na: 3\n").find(":3:1: duplicate key 'a'"), std::string::npos);
  Config c;
  EXPECT_NE(error_of([&] { c.apply_override("+a={x: 1, x: 2}"); }).find("duplicate key 'x'"), std::string::npos);
  // The same key in different mappings, and equal values in a list, are fine.
  EXPECT_EQ(file_error("a: {x: 1}\nb: {x: 1}\nc: [x, x]\n"), "");
}

TEST(ConfigLimits, NestingDepthHasALimitAndSaysSo) {
  // The issue's 20,000 levels, in flow style and in block style, and exactly the limit.
  const std::string flow = "a: " + std::string(20000, '[') + std::string(20000, ']') + "\n";
  std::string e = file_error(flow);
  EXPECT_NE(e.find(":1:"), std::string::npos) << e;
  EXPECT_NE(e.find("nesting deeper than 64 levels of mappings and lists"), std::string::npos) << e;
  std::string block;
  for (int i = 0; i < 200; ++i) block += std::string(2 * i, ' ') + "k" + std::to_string(i) + ":\n";
  e = file_error(block);
  EXPECT_NE(e.find("nesting deeper than 64 levels"), std::string::npos) << e;
  const std::string at_limit = "a: " + std::string(63, '[') + std::string(63, ']') + "\n";  // 64 with the top map
  EXPECT_EQ(file_error(at_limit), "");
}

TEST(ConfigLimits, FileSizeHasALimit) {
  TempDir dir;
  const auto big = dir.write("big.yaml", "a: 1\n# " + std::string(kMaxYamlFileBytes, 'x') + "\n");
  const std::string e = error_of([&] { Config::from_file(big); });
  EXPECT_EQ(e, big.string() + ": " + std::to_string(std::filesystem::file_size(big)) +
                   " bytes is larger than the limit of 1048576 bytes (1 MiB) for a config");
  // A plugin manifest goes through the same reader.
  const auto plugin = dir.write("p/plugin.yaml", "name: x\n# " + std::string(kMaxYamlFileBytes, 'x') + "\n");
  EXPECT_NE(error_of([&] { read_manifest(plugin.parent_path()); }).find("larger than the limit"), std::string::npos);
}

TEST(ConfigLimits, LongValuesAreRefusedAndShortenedInTheMessage) {
  const std::string value(1000000, 'v');  // the issue's 1 MB value, in an override
  Config c;
  std::string e = error_of([&] { c.apply_override("+model.attn_implementation=" + value); });
  EXPECT_NE(e.find("a value of 1000000 bytes is longer than the limit of 4096 bytes"), std::string::npos)
      << e.substr(0, 300);
  EXPECT_LT(e.size(), 400u) << "the value is shortened, not echoed";
  EXPECT_NE(e.find("... (1000000 bytes)"), std::string::npos) << e;
  // In a file: the position of the value.
  e = file_error("a:\n  b: " + std::string(5000, 'w') + "\n");
  EXPECT_NE(e.find(":2:6: a value of 5000 bytes is longer than the limit of 4096 bytes: 'www"), std::string::npos) << e;
  EXPECT_LT(e.size(), 300u);
  // At the limit it is accepted; shortening keeps UTF-8 characters whole.
  EXPECT_EQ(file_error("a: " + std::string(kMaxYamlValueBytes, 'w') + "\n"), "");
  std::string accents;
  for (int i = 0; i < 50; ++i) accents += "\xc3\xa9";  // 50 x U+00E9, 100 bytes
  EXPECT_EQ(shorten_for_message(accents), accents.substr(0, 60) + "... (100 bytes)");
  EXPECT_EQ(shorten_for_message("short"), "short");
}

TEST(ConfigLimits, ValuesMustBeValidUtf8) {
  std::string f;
  std::string e = file_error("a:\n  b: caf\xff\n", &f);
  EXPECT_EQ(e, f + ":2:9: invalid UTF-8 (byte 0xff); configuration must be UTF-8 text");
  // Overlong encodings, surrogates and truncated sequences are invalid too; real UTF-8 is fine.
  EXPECT_NE(file_error("a: \xc0\xaf\n").find("invalid UTF-8 (byte 0xc0)"), std::string::npos);
  EXPECT_NE(file_error("a: \xed\xa0\x80\n").find("invalid UTF-8 (byte 0xed)"), std::string::npos);
  EXPECT_NE(file_error("a: \xe2\x82\n").find("invalid UTF-8 (byte 0xe2)"), std::string::npos);
  EXPECT_EQ(file_error("a: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n"), "");
  Config c;
  e = error_of([&] { c.apply_override("+a=caf\xff"); });
  EXPECT_NE(e.find("override '+a=caf': invalid UTF-8 at byte 6 (0xff)"), std::string::npos) << e;
}

TEST(ConfigLimits, AliasBombIsRefused) {
  std::string bomb = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    bomb += fmt::format("l{}: &l{} [", i, i);
    for (int k = 0; k < 10; ++k) bomb += fmt::format("{}*l{}", k ? ", " : "", i - 1);
    bomb += "]\n";
  }
  const std::string e = file_error(bomb);
  EXPECT_NE(e.find("more than 1000000 nodes with aliases expanded"), std::string::npos) << e;
  EXPECT_EQ(file_error("base: &b {x: 1}\nother: *b\n"), "") << "ordinary aliases are fine";
}

}  // namespace
}  // namespace attnrt

namespace attnrt {
namespace {

// An HF-style config.json manifest has the same limits as the YAML files: size, UTF-8, nesting
// depth, string length, each refused with the file named (and a normal one still reads).
TEST(ConfigLimits, JsonManifestsHaveTheSameLimits) {
  test::TempDir dir;
  auto manifest_error = [&](const std::string& sub, const std::string& text) {
    const auto file = dir.write(sub + "/config.json", text);
    return error_of([&] { read_manifest(file.parent_path()); });
  };
  dir.write("ok/libattnrt_x.so", "");
  ASSERT_EQ(error_of([&] { read_manifest(dir.write("ok/config.json", R"({"attnrt": {"name": "x"}})").parent_path()); }),
            "");
  const std::string size = manifest_error("size", "{\"name\": \"" + std::string(kMaxYamlFileBytes, 'x') + "\"}");
  EXPECT_NE(size.find("larger than the limit"), std::string::npos) << size;
  EXPECT_NE(size.find("config.json"), std::string::npos) << size;
  const std::string deep = manifest_error("deep", std::string(100, '[') + std::string(100, ']'));
  EXPECT_NE(deep.find("nested deeper than 64 levels"), std::string::npos) << deep;
  const std::string longer = manifest_error("long", "{\"name\": \"" + std::string(5000, 'y') + "\"}");
  EXPECT_NE(longer.find("5000 bytes is longer than the limit of 4096"), std::string::npos) << longer;
  EXPECT_LT(longer.size(), 400u) << "the value is shortened in the message";
  const std::string utf8 = manifest_error("utf8", "{\"name\": \"\xff\"}");
  EXPECT_NE(utf8.find("invalid UTF-8 at byte 10"), std::string::npos) << utf8;
  // A repeated key is refused at any level, as the YAML files refuse it; the same key in two
  // different objects is fine.
  const std::string dup = manifest_error("dup", R"({"attnrt": {"name": "x", "name": "y"}})");
  EXPECT_NE(dup.find("config.json: duplicate key 'name' in one object"), std::string::npos) << dup;
  const std::string top = manifest_error("dup_top", R"({"name": "x", "devices": ["cpu"], "name": "y"})");
  EXPECT_NE(top.find("duplicate key 'name'"), std::string::npos) << top;
  dir.write("twice/libattnrt_x.so", "");
  EXPECT_EQ(manifest_error("twice", R"({"name": "x", "attnrt_extra": {"name": "z"}})"), "");
}

}  // namespace
}  // namespace attnrt
