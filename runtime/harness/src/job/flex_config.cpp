// attnrt.flex.<site> (flex_config.hpp): read and checked with positions, as attnrt.context_parallel
// is. An unknown key is an error, not a warning: a misspelt mask_mod would run the call unmasked.
#include <attnrt/harness/flex_config.hpp>
#include <attnrt/harness/safetensors.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/sites.hpp>
#include <attnrt/runtime/yaml_input.hpp>
#include <attnrt/validate.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace attnrt {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string>& site_keys() {
  static const std::vector<std::string> keys = {"score_mod", "mask_mod", "score_mod_grad",
                                                "aux",       "scalars",  "block_mask"};
  return keys;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& known) {
  const std::string guess = closest_match(word, known);
  return guess.empty() ? "" : "; did you mean '" + guess + "'?";
}

// Throws for a mapping key of `node` (at `path`) that is not one of `known`.
void check_keys(const Config& config, const std::string& path, const YAML::Node& node,
                const std::vector<std::string>& known) {
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    throw Error(fmt::format("{}: unknown key '{}.{}'{} ({} takes {})", config.origin(path + "." + key).describe(), path,
                            shorten_for_message(key), did_you_mean(key, known), path, fmt::join(known, ", ")));
  }
}

// A path set at `dotted`: relative to the config file that set it; an override's, to the
// working directory (as workload.file and plugin_dirs are).
fs::path resolve_path(const Config& config, const std::string& dotted, const std::string& value) {
  fs::path p(value);
  const Origin o = config.origin(dotted);
  if (p.is_relative() && o.override.empty() && !o.file.empty() && o.file.front() != '<')
    p = fs::path(o.file).parent_path() / p;
  return p.lexically_normal();
}

std::string read_mod_file(const fs::path& p, const std::string& where, const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) {
    throw Error(fmt::format("{}: {}: mod file '{}' not found", where, path, p.string()));
  }
  const auto size = fs::file_size(p, ec);
  if (ec || size > sdk::kFlexMaxSourceBytes) {
    throw Error(fmt::format("{}: {}: mod file '{}' is {} bytes; a mod is at most {} bytes", where, path, p.string(),
                            ec ? std::string("unreadable") : std::to_string(size), sdk::kFlexMaxSourceBytes));
  }
  std::ifstream in(p, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw Error(fmt::format("{}: {}: cannot read mod file '{}'", where, path, p.string()));
  const std::string s = text.str();
  if (s.find('\0') != std::string::npos || invalid_utf8_offset(s) != std::string::npos) {
    throw Error(fmt::format("{}: {}: mod file '{}' is not UTF-8 text", where, path, p.string()));
  }
  return s;
}

// A mod: inline text, or {file: path}.
FlexModSource read_mod(const Config& config, const std::string& path, const YAML::Node& v) {
  const std::string where = config.origin(path).describe();
  if (v.IsScalar()) {
    if (v.Scalar().find_first_not_of(" \t\r\n") == std::string::npos)
      throw Error(fmt::format("{}: {} is empty (leave the key out for none)", where, path));
    return {v.Scalar(), where};
  }
  if (!v.IsMap()) throw Error(fmt::format("{}: {} must be the mod's text or {{file: path}}", where, path));
  check_keys(config, path, v, {"file"});
  const YAML::Node f = v["file"];
  if (!f || !f.IsScalar() || f.Scalar().empty())
    throw Error(fmt::format("{}: {} needs 'file: path' (relative to the config file)", where, path));
  const fs::path p = resolve_path(config, path + ".file", f.Scalar());
  const std::string at = config.origin(path + ".file").describe();
  FlexModSource m{read_mod_file(p, at, path), at + " (" + f.Scalar() + ")"};
  if (m.text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw Error(fmt::format("{}: {}: mod file '{}' is empty", at, path, p.string()));
  return m;
}

std::string dtype_word(DLDataType t) {
  if (t.code == kDLFloat) return "float" + std::to_string(t.bits);
  if (t.code == kDLBfloat) return "bfloat16";
  if (t.code == kDLInt) return "int" + std::to_string(t.bits);
  if (t.code == kDLUInt) return "uint" + std::to_string(t.bits);
  return "dtype code " + std::to_string(t.code);
}

void read_aux(const Config& config, const std::string& path, const YAML::Node& v, FlexSiteSpec& s) {
  const std::string where = config.origin(path).describe();
  if (!v.IsMap()) throw Error(fmt::format("{}: {} must be {{file: x.safetensors, tensors: [name, ...]}}", where, path));
  check_keys(config, path, v, {"file", "tensors"});
  const YAML::Node f = v["file"], t = v["tensors"];
  if (!f || !f.IsScalar() || f.Scalar().empty())
    throw Error(fmt::format("{}: {} needs 'file: x.safetensors' (relative to the config file)", where, path));
  if (!t || !t.IsSequence() || t.size() == 0)
    throw Error(fmt::format("{}: {} needs 'tensors: [name, ...]' (aux0, aux1, ... in that order)", where, path));
  const std::string file_at = config.origin(path + ".file").describe();
  const std::string names_at = config.origin(path + ".tensors").describe();
  if (t.size() > size_t(sdk::kFlexMaxAux)) {
    throw Error(fmt::format("{}: {}.tensors lists {} tensors; a call takes at most {}", names_at, path, t.size(),
                            sdk::kFlexMaxAux));
  }
  s.aux_file = resolve_path(config, path + ".file", f.Scalar());
  std::error_code ec;
  if (!fs::is_regular_file(s.aux_file, ec))
    throw Error(fmt::format("{}: {}: safetensors file '{}' not found", file_at, path, s.aux_file.string()));
  SafetensorsFile st;
  try {
    st = load_safetensors(s.aux_file);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}: {}", file_at, path, e.what()));
  }
  std::vector<std::string> available;
  for (const auto& [name, tensor] : st.tensors) available.push_back(name);
  for (const auto& item : t) {
    if (!item.IsScalar() || item.Scalar().empty())
      throw Error(fmt::format("{}: {}.tensors must be a list of tensor names", names_at, path));
    const std::string name = item.Scalar();
    const std::string aux_n = "aux" + std::to_string(s.aux.size());
    if (std::find(s.aux_names.begin(), s.aux_names.end(), name) != s.aux_names.end())
      throw Error(fmt::format("{}: {}.tensors names '{}' twice", names_at, path, shorten_for_message(name)));
    auto it = st.tensors.find(name);
    if (it == st.tensors.end()) {
      throw Error(fmt::format("{}: {} ({}): '{}' has no tensor '{}'{} (it has: {})", names_at, path, aux_n,
                              s.aux_file.string(), shorten_for_message(name), did_you_mean(name, available),
                              fmt::join(available, ", ")));
    }
    const HostTensor& x = it->second;
    const DLDataType dt = x.dtype();
    // load_safetensors reads I64 as int32 (checked), so int64 ids arrive as int32.
    const bool ok = dt.lanes == 1 && ((dt.code == kDLInt && dt.bits == 32) || (dt.code == kDLFloat && dt.bits == 32));
    if (!ok) {
      throw Error(fmt::format("{}: {} ({}): tensor '{}' of {} is {}; an aux tensor must be int32, int64 or float32",
                              names_at, path, aux_n, name, s.aux_file.string(), dtype_word(dt)));
    }
    if (x.shape().empty() || x.shape().size() > 4) {
      throw Error(fmt::format("{}: {} ({}): tensor '{}' of {} has {} dimensions; an aux tensor has 1 to 4", names_at,
                              path, aux_n, name, s.aux_file.string(), x.shape().size()));
    }
    s.aux_names.push_back(name);
    s.aux.push_back(x);
  }
}

void read_block_mask(const Config& config, const std::string& path, const YAML::Node& v, FlexBlockMaskSpec& b) {
  const std::string where = config.origin(path).describe();
  if (v.IsScalar()) {
    try {
      b.enabled = v.as<bool>();
      return;
    } catch (const YAML::Exception&) {
    }
  }
  if (!v.IsMap()) {
    throw Error(fmt::format("{}: {} must be true, false or {{q_block_size: N, kv_block_size: N}}", where, path));
  }
  static const std::vector<std::string> keys = {"q_block_size", "kv_block_size", "broadcast_batch", "broadcast_heads"};
  check_keys(config, path, v, keys);
  b.enabled = true;
  for (const auto& kv : v) {
    const std::string key = kv.first.as<std::string>();
    const std::string at = config.origin(path + "." + key).describe();
    try {
      if (key == "q_block_size" || key == "kv_block_size") {
        const int n = kv.second.as<int>();
        if (n < 1 || n > 65536)
          throw Error(fmt::format("{}: {}.{} must be between 1 and 65536, got {}", at, path, key, n));
        (key == "q_block_size" ? b.q_block_size : b.kv_block_size) = n;
      } else {
        (key == "broadcast_batch" ? b.broadcast_batch : b.broadcast_heads) = kv.second.as<bool>();
      }
    } catch (const YAML::Exception&) {
      throw Error(fmt::format("{}: {}.{} must be {}, got '{}'", at, path, key,
                              key.find("size") != std::string::npos ? "a whole number" : "true or false",
                              shorten_for_message(kv.second.IsScalar() ? kv.second.Scalar() : "(not a scalar)")));
    }
  }
}

FlexSiteSpec read_site(const Config& config, const std::string& path, const std::string& site, const YAML::Node& v) {
  FlexSiteSpec s;
  s.site = site;
  s.where = config.origin(path).describe();
  if (!v.IsMap()) {
    throw Error(
        fmt::format("{}: {} must be a mapping of the site's mods ({})", s.where, path, fmt::join(site_keys(), ", ")));
  }
  check_keys(config, path, v, site_keys());
  for (const auto& kv : v) {
    const std::string key = kv.first.as<std::string>();
    const std::string child = path + "." + key;
    const YAML::Node& x = kv.second;
    if (key == "score_mod")
      s.score_mod = read_mod(config, child, x);
    else if (key == "mask_mod")
      s.mask_mod = read_mod(config, child, x);
    else if (key == "score_mod_grad")
      s.score_mod_grad = read_mod(config, child, x);
    else if (key == "aux")
      read_aux(config, child, x, s);
    else if (key == "block_mask")
      read_block_mask(config, child, x, s.block_mask);
    else if (key == "scalars") {
      const std::string at = config.origin(child).describe();
      if (!x.IsSequence()) throw Error(fmt::format("{}: {} must be a list of numbers", at, child));
      if (x.size() > size_t(sdk::kFlexMaxScalars)) {
        throw Error(
            fmt::format("{}: {} lists {} values; a call takes at most {}", at, child, x.size(), sdk::kFlexMaxScalars));
      }
      for (const auto& item : x) {
        try {
          s.scalars.push_back(item.as<float>());
        } catch (const YAML::Exception&) {
          throw Error(fmt::format("{}: {}[{}] must be a number, got '{}'", at, child, s.scalars.size(),
                                  shorten_for_message(item.IsScalar() ? item.Scalar() : "(not a scalar)")));
        }
      }
    }
  }
  if (s.score_mod.text.empty() && s.mask_mod.text.empty())
    throw Error(fmt::format("{}: {} gives neither a score_mod nor a mask_mod", s.where, path));
  if (!s.score_mod_grad.text.empty() && s.score_mod.text.empty()) {
    throw Error(fmt::format("{}: {} gives a score_mod_grad without a score_mod (the gradient of no score_mod is 1)",
                            s.score_mod_grad.origin, path));
  }
  if (s.block_mask.enabled && s.mask_mod.text.empty()) {
    throw Error(fmt::format("{}: {}.block_mask is built from the mask_mod, and the site gives none",
                            config.origin(path + ".block_mask").describe(), path));
  }
  return s;
}

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

}  // namespace

std::string FlexSiteSpec::source_name() const {
  std::vector<std::string> parts;
  if (!score_mod.text.empty()) parts.push_back("score_mod at " + score_mod.origin);
  if (!mask_mod.text.empty()) parts.push_back("mask_mod at " + mask_mod.origin);
  if (!score_mod_grad.text.empty()) parts.push_back("score_mod_grad at " + score_mod_grad.origin);
  return fmt::format("attnrt.flex.{}: {}", site, fmt::join(parts, ", "));
}

std::string FlexSiteSpec::summary() const {
  std::vector<std::string> parts;
  if (!score_mod.text.empty()) parts.push_back(score_mod_grad.text.empty() ? "score_mod" : "score_mod (+grad)");
  if (!mask_mod.text.empty()) parts.push_back("mask_mod");
  for (size_t i = 0; i < aux.size(); ++i) {
    parts.push_back(
        fmt::format("aux{} {} {} {}", i, aux_names[i], dtype_word(aux[i].dtype()), shape_text(aux[i].shape())));
  }
  if (!scalars.empty()) parts.push_back(fmt::format("scalars [{}]", fmt::join(scalars, ", ")));
  if (block_mask.enabled)
    parts.push_back(fmt::format("block mask {}x{}", block_mask.q_block_size, block_mask.kv_block_size));
  return fmt::format("{}", fmt::join(parts, ", "));
}

FlexSpecs read_flex(const Config& config, const std::vector<std::string>& site_names) {
  FlexSpecs specs;
  const YAML::Node flex = config.at("attnrt.flex");
  if (!flex || flex.IsNull()) return specs;
  const std::string where = config.origin("attnrt.flex").describe();
  if (!flex.IsMap()) {
    throw Error(
        fmt::format("{}: attnrt.flex must map attention site names to their mods, such as "
                    "{{attn_implementation: {{mask_mod: \"q_idx >= kv_idx\"}}}}",
                    where));
  }
  for (const auto& kv : flex) {
    const std::string site = kv.first.as<std::string>();
    const std::string path = "attnrt.flex." + site;
    if (std::find(site_names.begin(), site_names.end(), site) == site_names.end()) {
      throw Error(
          fmt::format("{}: attnrt.flex names '{}', which is no attention site of the configuration{} (sites: {})",
                      config.origin(path).describe(), shorten_for_message(site), did_you_mean(site, site_names),
                      site_names.empty() ? "none" : fmt::format("{}", fmt::join(site_names, ", "))));
    }
    specs.emplace(site, read_site(config, path, site, kv.second));
  }
  return specs;
}

}  // namespace attnrt
