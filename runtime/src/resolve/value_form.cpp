#include <attnrt/runtime/resolver.hpp>

namespace attnrt {
namespace {

// A folder name a hub name may use: <dir>/<org>/<name> must stay under <dir>.
bool folder_name(const std::string& s) { return !s.empty() && s != "." && s != ".."; }

}  // namespace

ParsedValue classify_value(const std::string& value) {
  ParsedValue v;
  v.text = value;
  auto starts = [&](const char* p) { return value.rfind(p, 0) == 0; };
  const bool ends_so = value.size() >= 3 && value.compare(value.size() - 3, 3, ".so") == 0;
  if (value.find('\0') != std::string::npos) {
    // The file system would read a path only up to the NUL, another file than the one shown.
    v.form = ValueForm::kInvalid;
    v.problem = "the value holds a NUL byte";
  } else if (value == "auto") {
    v.form = ValueForm::kAuto;
  } else if (starts("/") || starts("./") || starts("../") || starts("~") || ends_so) {
    v.form = ValueForm::kPath;
  } else if (const size_t slash = value.find('/'); slash != std::string::npos) {
    v.form = ValueForm::kHub;
    v.org = value.substr(0, slash);
    std::string rest = value.substr(slash + 1);
    const size_t at = rest.find('@');
    if (at != std::string::npos) {
      v.version = rest.substr(at + 1);
      rest = rest.substr(0, at);
    }
    v.name = rest;
    // Found by fuzzing (issue 19): 'acme/../../x' was a hub name whose folder, <dir>/acme/../../x,
    // lay outside the plugin folder.
    if (!folder_name(v.org) || !folder_name(v.name) || v.name.find('/') != std::string::npos ||
        (at != std::string::npos && v.version.empty())) {
      v.form = ValueForm::kInvalid;
      v.problem =
          "neither a path (a path begins with /, ./, ../ or ~, or ends in .so) nor a hub name org/name[@version] "
          "(org and name are single folder names, neither '.' nor '..'; a version follows '@')";
    }
  } else {
    v.form = ValueForm::kName;
  }
  return v;
}

}  // namespace attnrt
