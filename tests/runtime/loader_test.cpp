// Plugin loading: the good plugin, and every way a file can fail to be one.
#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/plugin_library.hpp>
#include <attnrt/runtime/registry.hpp>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace attnrt {
namespace {

using test::fixtures;

std::string load_error(const std::filesystem::path& p) {
  try {
    PluginLibrary::open(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Loader, LoadsAPlainCPlugin) {
  auto lib = PluginLibrary::open(fixtures() / "plugins/c_reference/libattnrt_c_reference.so");
  EXPECT_EQ(lib->name(), "c_reference");
  EXPECT_EQ(lib->version(), "0.1.0");
  EXPECT_EQ(lib->abi_version(), "1.4");
  EXPECT_EQ(describe_features(lib->capabilities().features), "gqa, causal, varlen, lse, deterministic");
  EXPECT_EQ(lib->api().backward, nullptr);
}

TEST(Loader, MissingEntrySymbol) {
  const std::string e = load_error(fixtures() / "broken/libattnrt_no_entry.so");
  EXPECT_NE(e.find("does not export 'attnrt_plugin_entry'"), std::string::npos) << e;
}

TEST(Loader, OtherAbiMajorNamesBothVersions) {
  const std::string e = load_error(fixtures() / "broken/libattnrt_abi2.so");
  EXPECT_NE(e.find("plugin ABI version 2.3 is incompatible with this runtime's ABI 1.4"), std::string::npos) << e;
}

TEST(Loader, NotASharedLibrary) {
  const std::string e = load_error(fixtures() / "broken/libnot_a_library.so");
  EXPECT_NE(e.find("not a loadable shared library"), std::string::npos) << e;
}

TEST(Loader, MissingFileAndDirectory) {
  EXPECT_NE(load_error("/nonexistent/libx.so").find("no such file"), std::string::npos);
  EXPECT_NE(load_error(fixtures() / "broken").find("not a regular file"), std::string::npos);
}

TEST(Loader, PluginErrorsComeBackAsErrorsWithTheirMessages) {
  Backend failing(PluginLibrary::open(fixtures() / "broken/failing/libattnrt_failing.so"));
  WorkloadSpec spec;
  spec.batch = 1;
  spec.seqlen_q = 4;
  spec.heads_q = 1;
  spec.head_dim = 8;
  Workload w = make_workload(spec);
  const attnrt_attention_desc d = w.desc;
  const attnrt_forward_args a = w.forward_args();
  try {
    failing.forward(d, a);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "failing: forward failed (internal error): kernel exploded on purpose");
  }
  const attnrt_backward_args b = w.backward_args();
  try {
    failing.backward(d, b);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "failing: backward failed (device error): device lost on purpose");
  }
}

TEST(Registry, ScansManifestsAndLooseLibraries) {
  Registry reg({fixtures() / "plugins", fixtures() / "loose", fixtures() / "broken"});
  const PluginRecord* by_manifest = reg.find("c_reference");
  ASSERT_NE(by_manifest, nullptr);
  EXPECT_TRUE(by_manifest->manifest.has_value());
  EXPECT_EQ(reg.find("c_ref"), by_manifest) << "manifest aliases resolve to the same plugin";
  EXPECT_NE(reg.find("failing"), nullptr);
  // Broken loose files are reported, not fatal.
  std::string problems;
  for (const auto& b : reg.broken()) problems += b.reason + "\n";
  EXPECT_NE(problems.find("libattnrt_no_entry.so: does not export"), std::string::npos) << problems;
  EXPECT_NE(problems.find("libattnrt_abi2.so: plugin ABI version 2.3"), std::string::npos) << problems;
  EXPECT_NE(problems.find("libnot_a_library.so: not a loadable shared library"), std::string::npos) << problems;
}

TEST(Registry, FirstDirectoryWins) {
  // c_reference is both in plugins/ (manifest) and loose/ (named by its entry point).
  Registry reg({fixtures() / "loose", fixtures() / "plugins"});
  ASSERT_NE(reg.find("c_reference"), nullptr);
  EXPECT_FALSE(reg.find("c_reference")->manifest.has_value());
}

TEST(Registry, ManifestNameMustMatchTheLibrary) {
  Registry reg({fixtures() / "broken"});
  const PluginRecord* rec = reg.find("somebody_else");
  ASSERT_NE(rec, nullptr);
  try {
    reg.load(*rec);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("library calls itself 'c_reference' but its manifest"), std::string::npos)
        << e.what();
  }
}

TEST(Registry, PathFormsAndHfConfigJson) {
  Registry reg({});
  EXPECT_TRUE(reg.record_for_path(fixtures() / "hf_style/c_reference_hf").manifest.has_value());
  EXPECT_EQ(reg.record_for_path(fixtures() / "hf_style/c_reference_hf").manifest->source.filename(), "config.json");
  EXPECT_EQ(reg.record_for_path(fixtures() / "loose/libloose_c_reference.so").library.filename(),
            "libloose_c_reference.so");
  EXPECT_THROW(reg.record_for_path("/nonexistent/plugin"), Error);
}

TEST(Registry, HubNamesAreLookedUpNeverDownloaded) {
  Registry reg({fixtures() / "hub"});
  auto found = reg.find_hub("acme", "c_reference", "");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->name, "c_reference");
  EXPECT_TRUE(reg.find_hub("acme", "c_reference", "0.1.0").has_value());
  EXPECT_FALSE(reg.find_hub("acme", "c_reference", "9.9.9").has_value()) << "another version is not a match";
  EXPECT_FALSE(reg.find_hub("acme", "missing", "").has_value());
}

TEST(Registry, BuiltinPluginsFolderIsNextToTheLibrary) {
  EXPECT_EQ(std::filesystem::weakly_canonical(Registry::builtin_plugin_dir()),
            std::filesystem::weakly_canonical(test::plugins_dir()));
}

}  // namespace
}  // namespace attnrt
