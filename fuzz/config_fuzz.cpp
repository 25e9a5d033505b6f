// A YAML config file as the Runtime reads one (runtime.cpp): parsed with the limits of
// yaml_input.hpp (Config::from_string), merged over the built-in defaults, its `attnrt:` settings
// read and its attention sites found (the deprecated keys of configs/deprecations.yaml included);
// and the same text read as a known-issue rule file (`attnrt.rules_files`).
#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/rules.hpp>
#include <attnrt/runtime/runtime.hpp>
#include <attnrt/runtime/settings.hpp>
#include <attnrt/runtime/sites.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include "fuzz_support.hpp"

namespace {

const attnrt::Deprecations& deprecations() {
  static const attnrt::Deprecations d = attnrt::Deprecations::from_yaml(
      YAML::Load(std::string(attnrt::embedded_config("deprecations.yaml"))), "<embedded:deprecations.yaml>");
  return d;
}

const attnrt::Config& defaults() {
  static const attnrt::Config config = attnrt::Config::from_string(
      std::string(attnrt::embedded_config("runtime_defaults.yaml")), "<embedded:runtime_defaults.yaml>");
  return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnrt;
  const std::string text = fuzz::text_of(data, size);
  const std::string name = "/fuzz/configs/c.yaml";
  fuzz::expect_clean("a config file", [&] {
    // A deep copy of the defaults (merging into an empty Config clones every value): Config
    // copies share yaml-cpp's nodes, and the merge changes them.
    Config config;
    config.merge(defaults());
    config.merge(Config::from_string(text, name));
    std::vector<std::string> warnings;
    const Settings settings = read_settings(config, &warnings);
    DeviceInfo cpu, cuda;
    cuda.dl = DLDevice{kDLCUDA, 0};
    cuda.cuda_arch = 90;
    settings.fallback_chain(cpu);
    settings.fallback_chain(cuda);
    const SiteScan scan = find_sites(config, deprecations(), settings.default_implementation);
    for (const Site& site : scan.sites) {
      config.at(site.key_path);
      site.origin.describe();
    }
  });
  fuzz::expect_clean("a rule file", [&] { parse_rules(load_yaml(text, name), name); });
  return 0;
}
