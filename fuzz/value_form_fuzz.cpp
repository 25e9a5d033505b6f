// An attn_implementation value's form (resolver.hpp's rule, classify_value): "auto", a path
// (begins with /, ./, ../ or ~, or ends in .so), a hub name org/name[@version], a registered name,
// or invalid (another value with a '/', or a NUL byte) with the reason. This target checks what
// the resolver relies on: the form is the rule's, a hub name's parts put together give the value
// back, and a hub name stays under the plugin folder it is looked up in (registry.cpp's find_hub
// joins <dir>/<org>/<name>): org and name are single, non-empty folder names, neither . nor ...
// Every value is also shortened as messages show it (shorten_for_message): short, and valid
// UTF-8 when the value is.
#include <attnrt/runtime/resolver.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include "fuzz_support.hpp"

namespace {

bool one_component(const std::string& s) { return !s.empty() && s != "." && s != ".." && s.find('/') == s.npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnrt;
  const std::string value = fuzz::text_of(data, size);
  auto starts = [&](const char* p) { return value.rfind(p, 0) == 0; };
  const bool ends_so = value.size() >= 3 && value.compare(value.size() - 3, 3, ".so") == 0;
  const bool path = starts("/") || starts("./") || starts("../") || starts("~") || ends_so;
  fuzz::expect_clean("classify_value", [&] {
    const ParsedValue v = classify_value(value);
    fuzz::check(v.text == value, "the value is kept");
    switch (v.form) {
      case ValueForm::kAuto: fuzz::check(value == "auto", "auto is only 'auto'"); break;
      case ValueForm::kPath: fuzz::check(path && value.find('\0') == std::string::npos, "a path by the rule"); break;
      case ValueForm::kHub:
        fuzz::check(!path && value != "auto", "a hub name is not a path");
        fuzz::check(v.org + "/" + v.name + (v.version.empty() ? "" : "@" + v.version) == value,
                    "org/name[@version] gives the value back");
        fuzz::check(one_component(v.org) && one_component(v.name),
                    "a hub name's org and name are single path components, neither . nor ..",
                    "org '" + shorten_for_message(v.org) + "', name '" + shorten_for_message(v.name) + "'");
        break;
      case ValueForm::kInvalid:
        fuzz::check(!v.problem.empty(), "an invalid value says why");
        fuzz::check(value.find('\0') != std::string::npos || (!path && value.find('/') != std::string::npos),
                    "only a value with a NUL byte, or with a '/' that is no path, is invalid");
        break;
      case ValueForm::kName:
        fuzz::check(!path && value != "auto", "a name is not a path");
        fuzz::check(value.find('/') == std::string::npos && value.find('\0') == std::string::npos,
                    "a name has no '/' (org/name is a hub name) and no NUL byte");
        break;
    }
  });
  fuzz::expect_clean("shorten_for_message", [&] {
    const std::string shown = shorten_for_message(value);
    fuzz::check(shown.size() <= 100, "a shortened value is short");
    if (invalid_utf8_offset(value) == std::string::npos)
      fuzz::check(invalid_utf8_offset(shown) == std::string::npos, "a valid UTF-8 value stays valid when shortened");
  });
  return 0;
}
