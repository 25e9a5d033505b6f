// Attention sites, deprecated keys, and "did you mean" for misspelled keys.
#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/runtime.hpp>
#include <attnrt/runtime/sites.hpp>

#include <gtest/gtest.h>

#include "test_support.hpp"

namespace attnrt {
namespace {

Deprecations deprecations() {
  return Deprecations::from_yaml(YAML::Load(std::string(embedded_config("deprecations.yaml"))), "deprecations.yaml");
}

SiteScan scan(const std::string& yaml, const std::string& default_impl = "auto") {
  static const Deprecations d = deprecations();
  return find_sites(Config::from_string(yaml, "c.yaml"), d, default_impl);
}

TEST(Sites, EveryOverrideConfigIsASite) {
  const SiteScan s = scan(
      "actor_rollout_ref:\n  model:\n    override_config:\n      attn_implementation: eager\n"
      "critic:\n  model:\n    override_config: {}\n",
      "flash_attention_2");
  ASSERT_EQ(s.sites.size(), 2u);
  EXPECT_EQ(s.sites[0].name, "actor_rollout_ref.model");
  EXPECT_EQ(s.sites[0].value, "eager");
  EXPECT_EQ(s.sites[0].origin.describe(), "c.yaml:4:7");
  EXPECT_FALSE(s.sites[0].implicit);
  EXPECT_EQ(s.sites[1].name, "critic.model");
  EXPECT_EQ(s.sites[1].value, "flash_attention_2") << "VERL: unset means the default implementation";
  EXPECT_TRUE(s.sites[1].implicit);
  EXPECT_TRUE(s.warnings.empty());
}

TEST(Sites, TopLevelAttnImplementation) {
  const SiteScan s = scan("attn_implementation: sdpa\nworkload: {attn_implementation: ignored}\n");
  ASSERT_EQ(s.sites.size(), 1u);
  EXPECT_EQ(s.sites[0].name, "attn_implementation");
  EXPECT_EQ(s.sites[0].value, "sdpa");
}

TEST(Sites, DeprecatedBooleanFlag) {
  const SiteScan s = scan("model: gpt2\nuse_flash_attention: true\n");
  ASSERT_EQ(s.sites.size(), 1u);
  EXPECT_EQ(s.sites[0].value, "flash_attention_2");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find(
                "c.yaml:2:1: 'use_flash_attention' is deprecated; use 'attn_implementation: flash_attention_2'"),
            std::string::npos)
      << s.warnings[0];
  EXPECT_EQ(scan("use_flash_attention: false\n", "auto").sites[0].value, "auto");
}

TEST(Sites, DeprecatedAttentionBackendKey) {
  const SiteScan s = scan("attention_backend: manual\n");
  ASSERT_EQ(s.sites.size(), 1u);
  EXPECT_EQ(s.sites[0].value, "manual") << "the value's alias is rewritten at resolution";
  EXPECT_NE(s.warnings[0].find("'attention_backend' is deprecated"), std::string::npos);
}

TEST(Sites, DeprecatedKeyBesideTheNewOneIsIgnoredWithAWarning) {
  const SiteScan s = scan("attn_implementation: eager\nuse_flash_attention: true\n");
  ASSERT_EQ(s.sites.size(), 1u);
  EXPECT_EQ(s.sites[0].value, "eager");
  EXPECT_NE(s.warnings[0].find("ignored because 'attn_implementation' is set"), std::string::npos);
}

TEST(Sites, MisspelledKeyGetsDidYouMeanWithFileAndLine) {
  const SiteScan s = scan("actor_rollout_ref:\n  model:\n    override_config:\n      attn_implementaton: eager\n");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("c.yaml:4:7: unknown key 'attn_implementaton'"), std::string::npos) << s.warnings[0];
  EXPECT_NE(s.warnings[0].find("did you mean 'attn_implementation'?"), std::string::npos) << s.warnings[0];
  // The misspelled key does not count; override_config still makes an (implicit) site.
  ASSERT_EQ(s.sites.size(), 1u);
  EXPECT_TRUE(s.sites[0].implicit);
}

TEST(Sites, MisspelledOverrideConfig) {
  const SiteScan s = scan("critic:\n  model:\n    overide_config:\n      attn_implementation: eager\n");
  ASSERT_FALSE(s.warnings.empty());
  EXPECT_NE(s.warnings[0].find("did you mean 'override_config'?"), std::string::npos) << s.warnings[0];
}

TEST(Sites, ValuesMustBeStrings) { EXPECT_THROW(scan("attn_implementation: [eager, sdpa]\n"), Error); }

TEST(Sites, UnrelatedKeysGetNoWarning) {
  EXPECT_TRUE(scan("trainer:\n  experiment_name: x\n  total_epochs: 3\nattn_implementation: eager\n").warnings.empty());
}

TEST(Sites, EditDistance) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(closest_match("strct", {"strict", "device"}), "strict");
  EXPECT_EQ(closest_match("zzzzzz", {"strict", "device"}), "");
}

}  // namespace
}  // namespace attnrt
