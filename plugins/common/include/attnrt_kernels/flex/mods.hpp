// flex_attention's mods (plugin_abi.h, attnrt_flex_attention) as a translation unit a compiler
// can take: the prelude (prelude.h), the user's score_mod / mask_mod / score_mod_grad bodies
// wrapped into functions of fixed signatures with the aux tensors and scalars bound to their
// names, and entry points for the target. The same text goes to the host C++ compiler (the CPU
// path) and to NVRTC (the CUDA path), so the mods mean the same thing on both.
#pragma once

#include <attnrt/plugin_abi.h>

#include <string>
#include <vector>

namespace attnrt::kernels::flex {

// What a compiled unit depends on besides the mods' text: each aux tensor's element type and
// rank (the views are typed), and how many scalars there are.
struct AuxSpec {
  const char* type;  // "int", "long long" or "float": the view's element type
  int ndim;          // 1-4
  bool operator==(const AuxSpec&) const = default;
};

struct Mods {
  std::string score_mod, mask_mod, score_mod_grad;  // bodies; "" when absent
  std::string source_name;                          // for messages; "" when the caller gave none
  std::vector<AuxSpec> aux;
  int num_scalars = 0;

  // The block's mods and aux signature (the block is already validated: check_flex).
  static Mods from_block(const attnrt_flex_attention& block);

  bool empty() const { return score_mod.empty() && mask_mod.empty(); }
  // A short text that differs whenever translation_unit's would (bodies, source name, aux types
  // and ranks, scalar count): an in-memory cache key that costs no translation unit per call.
  std::string identity() const;
  // Whether from_block(*block) would equal these mods (no block: no mods), compared in place:
  // no string is built, so a per-call lookup of a call shape seen before allocates nothing.
  bool matches(const attnrt_flex_attention* block) const;
};

// Where the unit is compiled. kHost: plain C++17 for the system compiler, with extern "C"
// per-element entry points (attnrt_flex_score, attnrt_flex_mask, attnrt_flex_grad: HostFns) and
// bounds-checked aux reads. kCuda: device functions attnrt_flex_user::score_mod / mask_mod /
// score_mod_grad for a kernel source that follows the unit.
enum class Target { kHost, kCuda };

// The translation unit. Compiler messages name the mod ("score_mod:2: error: ...") through
// #line directives. A body without ';' is an expression (its value is returned).
std::string translation_unit(const Mods& mods, Target target);

// The per-element entry points of a kHost unit, as dlsym finds them.
inline constexpr const char* kHostScoreSymbol = "attnrt_flex_score";
inline constexpr const char* kHostMaskSymbol = "attnrt_flex_mask";
inline constexpr const char* kHostGradSymbol = "attnrt_flex_grad";

}  // namespace attnrt::kernels::flex
