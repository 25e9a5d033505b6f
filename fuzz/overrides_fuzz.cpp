// Hydra-style overrides (overrides.hpp: `a.b=v`, `+a.b=v`, `++a.b=v`, `~a.b[=v]`), one per line
// of the input (at most 16), applied in turn to a config as the Runtime builds one: the built-in
// defaults and default.yaml, plus a VERL-like tree with nested sites and a list. Each override is
// parsed (parse_override) and applied (Config::apply_override); a refused one leaves the rest to
// go on, as a host catching attnrt::Error may. Then the result's settings and sites are read.
#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/overrides.hpp>
#include <attnrt/runtime/rules.hpp>
#include <attnrt/runtime/runtime.hpp>
#include <attnrt/runtime/settings.hpp>
#include <attnrt/runtime/sites.hpp>

#include "fuzz_support.hpp"

namespace {

constexpr const char* kVerlLike = R"(actor_rollout_ref:
  model:
    path: Qwen/Qwen2.5-7B
    override_config:
      attn_implementation: flash_attention_2
  rollout: {name: vllm, tensor_model_parallel_size: 2}
critic:
  model:
    override_config: {}
trainer:
  devices: [0, 1, 2, 3]
  logger: [console, wandb]
)";

const attnrt::Deprecations& deprecations() {
  static const attnrt::Deprecations d = attnrt::Deprecations::from_yaml(
      YAML::Load(std::string(attnrt::embedded_config("deprecations.yaml"))), "<embedded:deprecations.yaml>");
  return d;
}

const attnrt::Config& base() {
  static const attnrt::Config config = [] {
    using attnrt::Config, attnrt::embedded_config;
    Config c =
        Config::from_string(std::string(embedded_config("runtime_defaults.yaml")), "<embedded:runtime_defaults.yaml>");
    c.merge(Config::from_string(std::string(embedded_config("default.yaml")), "<embedded:default.yaml>"));
    c.merge(Config::from_string(kVerlLike, "/fuzz/verl.yaml"));
    return c;
  }();
  return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnrt;
  const std::string input = fuzz::text_of(data, size);
  // A deep copy of the base (merging into an empty Config clones every value): Config copies
  // share yaml-cpp's nodes, and the overrides change them.
  Config config;
  config.merge(base());
  size_t start = 0;
  for (int n = 0; n < 16 && start <= input.size(); ++n) {
    size_t end = input.find('\n', start);
    if (end == std::string::npos) end = input.size();
    const std::string text = input.substr(start, end - start);
    start = end + 1;
    fuzz::expect_clean("parse_override", [&] {
      const Override o = parse_override(text);
      fuzz::check(!o.key.empty() && o.text == text, "a parsed override has a key and its text");
      // As Runtime::check_added_top_level_keys does for +key and ++key.
      closest_match(o.key, settings_keys());
    });
    fuzz::expect_clean("Config::apply_override", [&] { config.apply_override(text); });
  }
  fuzz::expect_clean("the overridden config", [&] {
    std::vector<std::string> warnings;
    const Settings settings = read_settings(config, &warnings);
    find_sites(config, deprecations(), settings.default_implementation);
  });
  return 0;
}
