// Hydra's override grammar: each form, and each error quoting the override.
#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/overrides.hpp>

#include <gtest/gtest.h>

namespace attnrt {
namespace {

Config base() { return Config::from_string("a:\n  b: 1\n  list: [1, 2]\nscalar: 5\n", "base.yaml"); }

std::string error_of(const std::string& override_text) {
  Config c = base();
  try {
    c.apply_override(override_text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Overrides, ParsesEachForm) {
  EXPECT_EQ(parse_override("a.b=1").kind, Override::Kind::kSet);
  EXPECT_EQ(parse_override("+a.b=1").kind, Override::Kind::kAdd);
  EXPECT_EQ(parse_override("++a.b=1").kind, Override::Kind::kForce);
  const Override d = parse_override("~a.b");
  EXPECT_EQ(d.kind, Override::Kind::kDelete);
  EXPECT_FALSE(d.has_value);
  const Override v = parse_override("+x.y=a=b");
  EXPECT_EQ(v.key, "x.y");
  EXPECT_EQ(v.value, "a=b") << "only the first '=' separates";
}

TEST(Overrides, SetReplacesAnExistingKey) {
  Config c = base();
  c.apply_override("a.b=eager");
  EXPECT_EQ(c.at("a.b").as<std::string>(), "eager");
  EXPECT_EQ(c.origin("a.b").describe(), "override 'a.b=eager'");
}

TEST(Overrides, SetOfAMissingKeyTellsToUsePlus) {
  const std::string e = error_of("a.c=1");
  EXPECT_NE(e.find("override 'a.c=1'"), std::string::npos) << e;
  EXPECT_NE(e.find("use '+a.c=1'"), std::string::npos) << e;
}

TEST(Overrides, AddCreatesIntermediateMappings) {
  Config c = base();
  c.apply_override("+actor_rollout_ref.model.override_config.attn_implementation=eager");
  EXPECT_EQ(c.at("actor_rollout_ref.model.override_config.attn_implementation").as<std::string>(), "eager");
}

TEST(Overrides, AddOfAnExistingKeyTellsToUseDoublePlus) {
  const std::string e = error_of("+a.b=2");
  EXPECT_NE(e.find("already at 'a.b'"), std::string::npos) << e;
  EXPECT_NE(e.find("'++a.b=2'"), std::string::npos) << e;
}

TEST(Overrides, ForceAddsOrReplaces) {
  Config c = base();
  c.apply_override("++a.b=7");
  c.apply_override("++a.new=8");
  EXPECT_EQ(c.at("a.b").as<int>(), 7);
  EXPECT_EQ(c.at("a.new").as<int>(), 8);
}

TEST(Overrides, DeleteRemovesAndChecksTheValue) {
  Config c = base();
  c.apply_override("~a.b=1");
  EXPECT_FALSE(c.at("a.b"));
  EXPECT_NE(error_of("~a.missing").find("not in the config"), std::string::npos);
  EXPECT_NE(error_of("~a.b=2").find("its value is '1', not '2'"), std::string::npos);
}

TEST(Overrides, ValuesAreYaml) {
  Config c = base();
  c.apply_override("a.list=[3, 4, 5]");
  c.apply_override("++a.map={x: 1}");
  c.apply_override("++a.none=null");
  EXPECT_EQ(c.at("a.list").size(), 3u);
  EXPECT_EQ(c.at("a.map.x").as<int>(), 1);
  EXPECT_TRUE(c.at("a.none").IsNull());
  EXPECT_NE(error_of("++a.bad=[1, 2").find("not valid YAML"), std::string::npos);
}

TEST(Overrides, MalformedOverridesAreRejected) {
  EXPECT_NE(error_of("a.b").find("expected key=value"), std::string::npos);
  EXPECT_NE(error_of("=1").find("missing key"), std::string::npos);
  EXPECT_NE(error_of("a..b=1").find("malformed key"), std::string::npos);
  EXPECT_NE(error_of("a b=1").find("not allowed"), std::string::npos);
}

TEST(Overrides, CannotDescendIntoAScalarOrList) {
  EXPECT_NE(error_of("+scalar.x=1").find("'scalar' is a value, not a mapping"), std::string::npos);
  EXPECT_NE(error_of("+a.list.x=1").find("'a.list' is a list"), std::string::npos);
}

}  // namespace
}  // namespace attnrt
