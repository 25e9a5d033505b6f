// What fuzzing found (issue 19; fuzz/, tools/fuzz.sh, docs/reliability.md's "Fuzzing"): each
// input that crashed a target, or made the runtime throw something other than attnrt::Error,
// kept as a test that expects the clear error (or the right answer) instead.
#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/rules.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include <gtest/gtest.h>

#include <functional>

namespace attnrt {
namespace {

// The message of the attnrt::Error `f` throws; "" when it throws none. Another exception type
// fails the test (it escapes).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// config target: a rule file (attnrt.rules_files) that is a scalar or a list made yaml-cpp's
// operator[] throw YAML::BadSubscript past parse_rules.
TEST(FuzzFindings, RuleFileThatIsNotAMappingIsAnError) {
  for (const char* text : {"0", "rules", "[a, b]", "- id: x\n  message: m\n"}) {
    EXPECT_NE(error_of([&] { parse_rules(load_yaml(text, "r.yaml"), "r.yaml"); })
                  .find("r.yaml:1:1: a rule file must be a mapping with a 'rules' list"),
              std::string::npos)
        << text;
  }
  EXPECT_TRUE(parse_rules(load_yaml("# nothing\n", "r.yaml"), "r.yaml").empty());
}

}  // namespace
}  // namespace attnrt
