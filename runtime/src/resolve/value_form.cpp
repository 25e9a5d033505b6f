#include <attnrt/runtime/resolver.hpp>

namespace attnrt {

ParsedValue classify_value(const std::string& value) {
  ParsedValue v;
  v.text = value;
  auto starts = [&](const char* p) { return value.rfind(p, 0) == 0; };
  const bool ends_so = value.size() >= 3 && value.compare(value.size() - 3, 3, ".so") == 0;
  if (value == "auto") {
    v.form = ValueForm::kAuto;
  } else if (starts("/") || starts("./") || starts("../") || starts("~") || ends_so) {
    v.form = ValueForm::kPath;
  } else if (const size_t slash = value.find('/'); slash != std::string::npos) {
    v.form = ValueForm::kHub;
    v.org = value.substr(0, slash);
    std::string rest = value.substr(slash + 1);
    if (const size_t at = rest.find('@'); at != std::string::npos) {
      v.version = rest.substr(at + 1);
      rest = rest.substr(0, at);
    }
    v.name = rest;
  } else {
    v.form = ValueForm::kName;
  }
  return v;
}

}  // namespace attnrt
