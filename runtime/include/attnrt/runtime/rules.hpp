// Data-driven resolution rules, read from YAML in configs/ (embedded at build time):
//  - deprecations.yaml: deprecated keys (use_flash_attention, attention_backend, ...) and
//    deprecated implementation aliases (flash_attn_2, manual, ...);
//  - known_issues.yaml: rules that skip a candidate (or only warn) on a device / dtype /
//    feature combination known to misbehave, with the message users see.
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/export.hpp>

#include <map>
#include <string>
#include <vector>

namespace attnrt {

struct DeprecatedKey {
  std::string key;
  bool boolean = false;   // true: value is a flag (use_flash_attention: true)
  std::string when_true;  // implementation a true flag means
  std::string message;    // extra advice
};

struct ATTNRT_API Deprecations {
  std::map<std::string, std::string> aliases;  // deprecated value -> implementation name
  std::map<std::string, DeprecatedKey> keys;

  // Throws attnrt::Error with file:line for malformed entries.
  static Deprecations from_yaml(const YAML::Node& root, const std::string& file);
};

struct ATTNRT_API KnownIssueRule {
  enum class Action { kSkip, kWarn };
  std::string id;
  std::vector<std::string> devices;  // cpu, cuda, mps; empty: any
  int32_t min_cuda_arch = 0, max_cuda_arch = 0;
  std::vector<std::string> implementations;  // candidate names; empty: any
  std::vector<std::string> requested;        // values asked for at the site; empty: any
  std::vector<std::string> dtypes;           // fp32, fp16, bf16; empty: any
  std::vector<std::string> features;         // all must be in use: causal, window, softcap, sinks,
                                             // alibi, varlen, paged, dropout, gqa
  int64_t min_seqlen_k = 0;
  Action action = Action::kSkip;
  std::string message;
  Origin origin;

  bool matches(const std::string& device, int32_t cuda_arch, const std::string& candidate,
               const std::string& requested_value, const attnrt_attention_desc& desc) const;
};

ATTNRT_API std::vector<KnownIssueRule> parse_rules(const YAML::Node& root, const std::string& file);

// Feature words in use by a descriptor (the vocabulary of KnownIssueRule::features).
ATTNRT_API std::vector<std::string> features_in_use(const attnrt_attention_desc& desc);

}  // namespace attnrt
