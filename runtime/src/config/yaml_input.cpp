// Two passes: yaml-cpp's event parser first, with a handler that enforces the limits and the
// duplicate-key rule as events arrive (so a 20,000-deep file stops at depth 65, long before
// yaml-cpp's own recursion guard), then YAML::Load for the node tree the rest of attnrt reads.
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace attnrt {
namespace {

std::string position(const std::string& name, const YAML::Mark& m) {
  return fmt::format("{}:{}:{}", name, m.line + 1, m.column + 1);
}

class LimitChecker : public YAML::EventHandler {
 public:
  explicit LimitChecker(std::string name) : name_(std::move(name)) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor, "~"); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    // An alias inside the node its anchor names makes yaml-cpp build a cycle, which every walk of
    // the tree (Config's origins, the site scan) followed until the stack overflowed.
    for (const Frame& f : stack_) {
      if (f.anchor == anchor) {
        throw Error(fmt::format("{}: an alias inside the node its anchor names (a cycle)", position(name_, mark)));
      }
    }
    const auto it = anchor_nodes_.find(anchor);
    count(mark, it == anchor_nodes_.end() ? 1 : it->second);
    element(mark, nullptr);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string& value) override {
    if (value.size() > kMaxYamlValueBytes) {
      throw Error(fmt::format("{}: a value of {} bytes is longer than the limit of {} bytes: '{}'",
                              position(name_, mark), value.size(), kMaxYamlValueBytes, shorten_for_message(value)));
    }
    leaf(mark, anchor, value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor, false);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor, true);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    bool is_map;
    bool expecting_key = true;
    YAML::anchor_t anchor;
    std::size_t nodes_before;
    std::map<std::string, YAML::Mark> keys;
  };

  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor, const std::string& value) {
    count(mark, 1);
    if (anchor != YAML::NullAnchor) anchor_nodes_[anchor] = 1;
    element(mark, &value);
  }

  // A node (scalar, alias or container) inside the innermost container: in a mapping, keys and
  // values alternate; a scalar key is checked against the mapping's earlier keys.
  void element(const YAML::Mark& mark, const std::string* scalar) {
    if (stack_.empty() || !stack_.back().is_map) return;
    Frame& f = stack_.back();
    if (f.expecting_key && scalar == nullptr) {
      // Every reader of attnrt's files takes keys as strings (yaml-cpp's as<std::string>() threw
      // its own exception past them on `? [a, b]`; found by fuzzing), and an alias key would
      // escape the duplicate-key rule.
      throw Error(fmt::format("{}: a key must be a plain value (a name or a number), not a mapping, a list or an alias",
                              position(name_, mark)));
    }
    if (f.expecting_key) {
      const auto [it, inserted] = f.keys.emplace(*scalar, mark);
      if (!inserted) {
        throw Error(fmt::format("{}: duplicate key '{}' (first at {}); YAML 1.2 allows a key once per mapping",
                                position(name_, mark), shorten_for_message(*scalar), position(name_, it->second)));
      }
    }
    f.expecting_key = !f.expecting_key;
  }

  void open(const YAML::Mark& mark, YAML::anchor_t anchor, bool is_map) {
    count(mark, 1);
    element(mark, nullptr);
    if (static_cast<int>(stack_.size()) >= kMaxYamlDepth) {
      throw Error(fmt::format("{}: nesting deeper than {} levels of mappings and lists (the limit for a config)",
                              position(name_, mark), kMaxYamlDepth));
    }
    stack_.push_back(Frame{is_map, true, anchor, nodes_ - 1, {}});
  }

  void close() {
    if (stack_.empty()) return;
    const Frame& f = stack_.back();
    if (f.anchor != YAML::NullAnchor) anchor_nodes_[f.anchor] = nodes_ - f.nodes_before;
    stack_.pop_back();
  }

  // Nodes as a reader walking the tree sees them, every alias expanded.
  void count(const YAML::Mark& mark, std::size_t n) {
    nodes_ = n > kMaxYamlNodes - std::min(nodes_, kMaxYamlNodes) ? kMaxYamlNodes + 1 : nodes_ + n;
    if (nodes_ > kMaxYamlNodes) {
      throw Error(fmt::format("{}: more than {} nodes with aliases expanded (the limit for a config; nested aliases?)",
                              position(name_, mark), kMaxYamlNodes));
    }
  }

  std::string name_;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, std::size_t> anchor_nodes_;
  std::size_t nodes_ = 0;
};

// Line and column (1-based) of a byte offset.
std::string byte_position(const std::string& name, const std::string& text, std::size_t offset) {
  std::size_t line = 1, line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') ++line, line_start = i + 1;
  }
  return fmt::format("{}:{}:{}", name, line, offset - line_start + 1);
}

}  // namespace

std::size_t invalid_utf8_offset(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4, cp = c & 0x07;
    } else {
      return i;  // a continuation byte, an overlong lead (C0, C1) or F5..FF
    }
    if (n - i < len) return i;
    for (std::size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += len;
  }
  return std::string::npos;
}

std::string shorten_for_message(const std::string& value) {
  if (value.size() <= 80) return value;
  std::size_t cut = 60;
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return fmt::format("{}... ({} bytes)", value.substr(0, cut), value.size());
}

YAML::Node load_yaml(const std::string& text, const std::string& name) {
  if (text.size() > kMaxYamlFileBytes) {
    throw Error(fmt::format("{}: {} bytes is larger than the limit of {} bytes (1 MiB) for a config", name, text.size(),
                            kMaxYamlFileBytes));
  }
  if (const std::size_t bad = invalid_utf8_offset(text); bad != std::string::npos) {
    throw Error(fmt::format("{}: invalid UTF-8 (byte 0x{:02x}); configuration must be UTF-8 text",
                            byte_position(name, text, bad), static_cast<unsigned char>(text[bad])));
  }
  try {
    {
      std::istringstream in(text);
      YAML::Parser parser(in);
      LimitChecker checker(name);
      parser.HandleNextDocument(checker);
    }
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("{}: {}", position(name, e.mark), e.msg));
  }
}

std::string read_yaml_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxYamlFileBytes) {
    throw Error(fmt::format("{}: {} bytes is larger than the limit of {} bytes (1 MiB) for a config", path.string(),
                            size, kMaxYamlFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open");
  std::string text;
  text.resize(kMaxYamlFileBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));  // a file growing meanwhile still stops at the limit
  return text;
}

YAML::Node load_yaml_file(const std::filesystem::path& path) { return load_yaml(read_yaml_file(path), path.string()); }

}  // namespace attnrt
