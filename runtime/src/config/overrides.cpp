#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/overrides.hpp>

#include <cctype>

namespace attnrt {

Override parse_override(const std::string& text) {
  Override o;
  o.text = text;
  std::string rest = text;
  if (rest.rfind("++", 0) == 0) {
    o.kind = Override::Kind::kForce;
    rest = rest.substr(2);
  } else if (rest.rfind("+", 0) == 0) {
    o.kind = Override::Kind::kAdd;
    rest = rest.substr(1);
  } else if (rest.rfind("~", 0) == 0) {
    o.kind = Override::Kind::kDelete;
    rest = rest.substr(1);
  }
  const size_t eq = rest.find('=');
  o.key = rest.substr(0, eq);
  if (eq != std::string::npos) {
    o.value = rest.substr(eq + 1);
    o.has_value = true;
  }
  if (o.key.empty()) throw Error("override '" + text + "': missing key before '='");
  if (o.kind != Override::Kind::kDelete && !o.has_value) {
    throw Error("override '" + text + "': expected key=value (or ~key to delete)");
  }
  if (o.key.front() == '.' || o.key.back() == '.' || o.key.find("..") != std::string::npos) {
    throw Error("override '" + text + "': malformed key '" + o.key + "'");
  }
  for (char c : o.key) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '/' || c == '@')) {
      throw Error("override '" + text + "': character '" + std::string(1, c) + "' is not allowed in key '" + o.key +
                  "'");
    }
  }
  return o;
}

}  // namespace attnrt
