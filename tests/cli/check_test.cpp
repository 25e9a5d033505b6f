// attnrt check: passes the shipped plugins, fails each deliberately broken one with a clear line
// per failed check, and survives a plugin that crashes.
#include <attnrt/harness/conformance.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace attnrt {
namespace {

using test::fixtures;
using test::run_cli;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

nlohmann::json check_json(const std::string& plugin, int* exit_code) {
  const auto r = run_cli("check '" + plugin + "' --json");
  *exit_code = r.exit_code;
  return nlohmann::json::parse(r.output.substr(r.output.find("{\n")));
}

std::map<std::string, std::string> results(const nlohmann::json& j) {
  std::map<std::string, std::string> m;
  for (const auto& c : j["checks"])
    m[c["name"]] = c["result"].get<std::string>() + ": " + c["detail"].get<std::string>();
  return m;
}

TEST(Check, ShippedPluginsPass) {
  for (const std::string plugin : {"eager", "sdpa"}) {
    int rc = -1;
    const auto j = check_json(plugin, &rc);
    EXPECT_EQ(rc, 0) << j.dump(2);
    EXPECT_TRUE(j["passed"].get<bool>());
    const auto m = results(j);
    for (const char* name :
         {"load", "exports", "abi", "manifest", "create", "numerics/cpu/fp32", "numerics/cpu/bf16", "support-query",
          "bad-arguments/null-q", "bad-arguments/wrong-device", "threads", "deterministic"}) {
      ASSERT_TRUE(m.count(name)) << plugin << " lacks check " << name;
      EXPECT_EQ(m.at(name).rfind("PASS", 0), 0u) << plugin << " " << name << ": " << m.at(name);
    }
  }
}

TEST(Check, PlainCPluginPassesByDirectoryAndHfConfig) {
  int rc = -1;
  EXPECT_TRUE(check_json((fixtures() / "plugins/c_reference").string(), &rc)["passed"].get<bool>());
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(check_json((fixtures() / "hf_style/c_reference_hf").string(), &rc)["passed"].get<bool>());
}

TEST(Check, WrongAbiMajor) {
  const auto r = run_cli("check " + (fixtures() / "broken/libattnrt_abi2.so").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.output, "load           FAIL    ")) << r.output;
  EXPECT_TRUE(contains(r.output, "plugin ABI version 2.3 is incompatible with this runtime's ABI 1.1")) << r.output;
}

TEST(Check, MissingEntrySymbol) {
  int rc = -1;
  const auto m = results(check_json((fixtures() / "broken/libattnrt_no_entry.so").string(), &rc));
  EXPECT_EQ(rc, 1);
  EXPECT_TRUE(contains(m.at("load"), "FAIL: ") && contains(m.at("load"), "does not export 'attnrt_plugin_entry'"))
      << m.at("load");
  EXPECT_TRUE(contains(m.at("exports"), "found 0 symbol(s)")) << m.at("exports");
}

TEST(Check, PluginThatAdvertisesAFeatureItComputesWrongly) {
  int rc = -1;
  const auto m = results(check_json((fixtures() / "broken/liar").string(), &rc));
  EXPECT_EQ(rc, 1);
  EXPECT_TRUE(contains(m.at("numerics/cpu/fp32"), "FAIL: softcap: max |out - fp64 reference|"))
      << m.at("numerics/cpu/fp32");
  EXPECT_EQ(m.at("load").rfind("PASS", 0), 0u);
}

TEST(Check, CrashOnBadInputIsAFailedCheckNotACrashOfTheKit) {
  const auto r = run_cli("check " + (fixtures() / "broken/crasher").string() + " --junit /dev/stdout");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "bad-arguments/null-q          FAIL    crashed with signal Segmentation fault (11)"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "bad-arguments/wrong-dtype     FAIL    accepted the call and returned ATTNRT_OK"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "<testcase classname=\"attnrt.check\" name=\"bad-arguments/null-q\"")) << r.output;
  EXPECT_TRUE(contains(r.output, "<failure message=\"crashed with signal")) << r.output;
  EXPECT_TRUE(contains(r.output, "numerics/cpu/fp32             PASS")) << "other checks still run: " << r.output;
}

TEST(Check, UnknownPluginIsOneClearError) {
  const auto r = run_cli("check no_such_plugin");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.output, "error: no plugin named 'no_such_plugin'")) << r.output;
}

TEST(ElfExports, ReadsTheDynamicSymbolTable) {
  EXPECT_EQ(elf_exported_symbols(test::plugins_dir() / "sdpa/libattnrt_sdpa.so"),
            std::vector<std::string>{"attnrt_plugin_entry"});
  EXPECT_THROW(elf_exported_symbols(fixtures() / "broken/libnot_a_library.so"), std::exception);
}

}  // namespace
}  // namespace attnrt
