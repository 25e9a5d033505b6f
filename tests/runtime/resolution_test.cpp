// Resolution: every value form, every fallback path, strict mode, deprecated aliases, rules.
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/resolver.hpp>
#include <attnrt/runtime/runtime.hpp>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace attnrt {
namespace {

using test::fixtures;

attnrt_attention_desc small_desc() {
  attnrt_attention_desc d{};
  d.struct_size = sizeof d;
  d.dtype = ATTNRT_DTYPE_FP32;
  d.head_dim = d.head_dim_v = 64;
  d.heads_q = d.heads_kv = 4;
  d.batch = 2;
  d.seqlen_q = d.seqlen_k = 128;
  d.softmax_scale = 0.125f;
  d.window_left = d.window_right = -1;
  d.return_lse = 1;
  return d;
}

class Resolution_ : public ::testing::Test {
 protected:
  Resolver make(bool strict = false, std::vector<KnownIssueRule> rules = {}) {
    Settings s;
    s.strict = strict;
    s.fallback["cpu"] = {"sdpa", "eager"};
    s.fallback["cuda"] = {"flash_attention_2", "sdpa", "eager"};
    const Deprecations d =
        Deprecations::from_yaml(YAML::Load(std::string(embedded_config("deprecations.yaml"))), "d.yaml");
    return Resolver(registry_, s, d, std::move(rules), probe_devices().cpu);
  }
  Registry registry_{{test::plugins_dir(), fixtures() / "plugins", fixtures() / "hub"}};
};

TEST(ValueForm, ToldApartByRule) {
  EXPECT_EQ(classify_value("auto").form, ValueForm::kAuto);
  EXPECT_EQ(classify_value("flash_attention_2").form, ValueForm::kName);
  for (const char* p : {"/abs/dir", "./rel", "../up", "~/home/x", "libx.so", "dir/libx.so"}) {
    EXPECT_EQ(classify_value(p).form, ValueForm::kPath) << p;
  }
  const ParsedValue hub = classify_value("kernels-community/vllm-flash-attn3@v2");
  EXPECT_EQ(hub.form, ValueForm::kHub);
  EXPECT_EQ(hub.org, "kernels-community");
  EXPECT_EQ(hub.name, "vllm-flash-attn3");
  EXPECT_EQ(hub.version, "v2");
}

TEST_F(Resolution_, NameAndManifestAlias) {
  Resolver r = make();
  Resolution a = r.resolve("s", "eager", small_desc());
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_EQ(a.chosen, "eager");
  EXPECT_FALSE(a.fell_back);
  EXPECT_EQ(r.resolve("s", "math", small_desc()).chosen, "eager");
}

TEST_F(Resolution_, DeprecatedAliasWorksWithANote) {
  Resolver r = make();
  Resolution a = r.resolve("s", "manual", small_desc());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.chosen, "eager");
  EXPECT_EQ(a.normalized, "eager");
  ASSERT_FALSE(a.notes.empty());
  EXPECT_EQ(a.notes[0], "'manual' is a deprecated name; use 'eager'");
}

TEST_F(Resolution_, AutoTakesTheDeviceChain) {
  Resolver r = make();
  Resolution a = r.resolve("s", "auto", small_desc());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.chosen, "sdpa");
  EXPECT_FALSE(a.fell_back);
  EXPECT_EQ(a.attempts.size(), 1u);
}

// flash_attention_3 is not installed where CUDA or CUTLASS is missing, and cannot run on the CPU
// where it is built: either way the CPU call falls back, and says which.
TEST_F(Resolution_, UnusableFallsBackWithItsReason) {
  Resolver r = make();
  Resolution a = r.resolve("critic.model", "flash_attn_3", small_desc());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.chosen, "sdpa");
  EXPECT_TRUE(a.fell_back);
  ASSERT_EQ(a.attempts.size(), 2u);
  EXPECT_EQ(a.attempts[0].candidate, "flash_attention_3");
  const std::string why = test::cuda_plugin_reason_on_cpu("flash_attention_3");
  EXPECT_NE(
      a.attempts[0].reason.find(why == "not installed" ? "not installed (no plugin named 'flash_attention_3'" : why),
      std::string::npos)
      << a.attempts[0].reason;
}

TEST_F(Resolution_, AFeatureIsNeverDroppedToMakeABackendFit) {
  Resolver r = make();
  attnrt_attention_desc d = small_desc();
  d.softcap = 30.0f;
  Resolution a = r.resolve("s", "c_reference", d);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.chosen, "sdpa") << "c_reference cannot softcap: it must be passed over, not used";
  EXPECT_EQ(a.attempts[0].reason, "softcap is not supported");
}

TEST_F(Resolution_, PathToLibraryAndToDirectory) {
  Resolver r = make();
  const auto lib = fixtures() / "plugins/c_reference/libattnrt_c_reference.so";
  EXPECT_EQ(r.resolve("s", lib.string(), small_desc()).chosen, "c_reference");
  EXPECT_EQ(r.resolve("s", (fixtures() / "plugins/c_reference").string(), small_desc()).chosen, "c_reference");
  Resolution hf = r.resolve("s", (fixtures() / "hf_style/c_reference_hf").string(), small_desc());
  EXPECT_EQ(hf.chosen, "c_reference");
  EXPECT_FALSE(hf.fell_back);
}

TEST_F(Resolution_, MissingPathFallsBackSayingWhy) {
  Resolver r = make();
  Resolution a = r.resolve("s", "/nonexistent/triton_attention_sink_hf", small_desc());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.chosen, "sdpa");
  EXPECT_NE(a.attempts[0].reason.find("no such file or directory"), std::string::npos);
}

TEST_F(Resolution_, OtherAbiMajorIsRefusedNamingBothVersions) {
  Resolver r = make();
  Resolution a = r.resolve("s", (fixtures() / "broken/libattnrt_abi2.so").string(), small_desc());
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a.fell_back);
  EXPECT_NE(a.attempts[0].reason.find("2.3 is incompatible with this runtime's ABI 1.4"), std::string::npos)
      << a.attempts[0].reason;
}

TEST_F(Resolution_, HubNameUnderTheSearchPath) {
  Resolver r = make();
  EXPECT_EQ(r.resolve("s", "acme/c_reference", small_desc()).chosen, "c_reference");
  Resolution miss = r.resolve("s", "kernels-community/vllm-flash-attn3", small_desc());
  ASSERT_TRUE(miss.ok());
  EXPECT_EQ(miss.chosen, "sdpa");
  EXPECT_NE(miss.attempts[0].reason.find("attnrt never downloads plugins"), std::string::npos)
      << miss.attempts[0].reason;
  EXPECT_NE(miss.attempts[0].reason.find("kernels-community/vllm-flash-attn3"), std::string::npos);
}

TEST_F(Resolution_, StrictTurnsFallbackIntoAnErrorWithEveryReason) {
  Resolver r = make(/*strict=*/true);
  Resolution a = r.resolve("s", "flash_attention_2", small_desc());
  EXPECT_FALSE(a.ok());
  EXPECT_NE(a.error.find("strict mode: 'flash_attention_2' cannot be used on cpu"), std::string::npos) << a.error;
  EXPECT_NE(a.error.find("- flash_attention_2: " + test::fa2_reason_on_cpu()), std::string::npos) << a.error;
  EXPECT_EQ(a.attempts.size(), 1u) << "strict tries nothing else";
  EXPECT_TRUE(r.resolve("s", "eager", small_desc()).ok()) << "strict still allows what was asked for";
  EXPECT_TRUE(r.resolve("s", "auto", small_desc()).ok()) << "auto means: choose";
}

TEST_F(Resolution_, NoCandidateListsEveryReason) {
  Resolver r = make();
  attnrt_attention_desc d = small_desc();
  d.dropout_p = 0.1f;
  Resolution a = r.resolve("s", "c_reference", d);
  EXPECT_FALSE(a.ok());
  EXPECT_NE(a.error.find("no attention backend can run this call on cpu"), std::string::npos);
  EXPECT_NE(a.error.find("- c_reference: dropout is not supported"), std::string::npos) << a.error;
  EXPECT_NE(a.error.find("- sdpa: dropout is not supported"), std::string::npos) << a.error;
  EXPECT_NE(a.error.find("- eager: dropout is not supported"), std::string::npos) << a.error;
}

TEST_F(Resolution_, KnownIssueRulesSkipOrWarn) {
  const YAML::Node rules = YAML::Load(
      "rules:\n"
      "  - id: cpu-softcap\n    match: {devices: [cpu], implementations: [sdpa], features: [softcap]}\n"
      "    action: skip\n    message: softcap on sdpa is under investigation\n"
      "  - id: eager-note\n    match: {implementations: [eager]}\n    action: warn\n    message: eager is slow\n");
  Resolver r = make(false, parse_rules(rules, "rules.yaml"));
  attnrt_attention_desc d = small_desc();
  EXPECT_EQ(r.resolve("s", "auto", d).chosen, "sdpa") << "the rule needs softcap in use";
  d.softcap = 20.0f;
  Resolution a = r.resolve("s", "auto", d);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.chosen, "eager");
  EXPECT_NE(a.attempts[0].reason.find("known issue 'cpu-softcap' (rules.yaml:2:5): softcap on sdpa"), std::string::npos)
      << a.attempts[0].reason;
  ASSERT_FALSE(a.notes.empty());
  EXPECT_NE(a.notes.back().find("eager is slow"), std::string::npos);
}

TEST_F(Resolution_, ShippedKnownIssuesParse) {
  const auto rules = parse_rules(YAML::Load(std::string(embedded_config("known_issues.yaml"))), "known_issues.yaml");
  ASSERT_GE(rules.size(), 2u);
  attnrt_attention_desc d = small_desc();
  EXPECT_TRUE(rules[0].matches("mps", 0, "sdpa", "auto", d));
  EXPECT_FALSE(rules[0].matches("cpu", 0, "sdpa", "auto", d));
  EXPECT_FALSE(rules[0].matches("mps", 0, "sdpa", "eager", d)) << "an explicit request is honoured";
}

TEST(Rules, MalformedRulesNameTheirPosition) {
  try {
    parse_rules(YAML::Load("rules:\n  - id: x\n    message: m\n    match: {devics: [cpu]}\n"), "r.yaml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("r.yaml:4:13: unknown match key 'devics'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attnrt

namespace attnrt {
namespace {

// Issue 19: `+strict=true` adds a top-level key attnrt does not read, where `attnrt.strict=true`
// was meant: a warning naming the setting, an error under strict mode; an added top-level key
// unlike any setting (the host's own configuration) is left alone.
TEST(AddedTopLevelKeys, ASettingsNameAddedAtTheTopGetsDidYouMean) {
  RuntimeOptions o;
  o.overrides = {"+strict=true", "+trainer_steps=10", "++num_thread=4"};
  Runtime rt(o);
  EXPECT_FALSE(rt.settings().strict) << "+strict=true must not turn strict mode on";
  std::vector<std::string> mine;
  for (const std::string& w : rt.warnings()) {
    if (w.find("adds a top-level key") != std::string::npos) mine.push_back(w);
  }
  ASSERT_EQ(mine.size(), 2u) << "one per mistaken key, none for +trainer_steps";
  EXPECT_NE(mine[0].find("'+strict=true'"), std::string::npos) << mine[0];
  EXPECT_NE(mine[0].find("did you mean 'attnrt.strict'?"), std::string::npos) << mine[0];
  EXPECT_NE(mine[1].find("did you mean 'attnrt.num_threads'?"), std::string::npos) << mine[1];
}

TEST(AddedTopLevelKeys, AreAnErrorUnderStrictMode) {
  RuntimeOptions o;
  o.overrides = {"attnrt.strict=true", "+device=cpu"};
  try {
    Runtime rt(o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("did you mean 'attnrt.device'?"), std::string::npos) << what;
    EXPECT_NE(what.find("attnrt.strict"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace attnrt
