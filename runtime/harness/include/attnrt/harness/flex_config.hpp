// flex_attention's mods from a configuration (issue 15): `attnrt.flex.<site>` gives an attention
// site's score_mod / mask_mod / score_mod_grad (inline text or a file beside the config), aux
// tensors from a safetensors file, scalars, and a block mask that the harness builds from the
// mask_mod on the host (PyTorch's create_block_mask). `attnrt run` and `attnrt bench` attach the
// block to the site's calls and check them against the fp64 reference with the same mods.
//
//   attn_implementation: flex_attention          # the site (or VERL's actor_rollout_ref.model, ...)
//   attnrt:
//     flex:
//       attn_implementation:                     # keyed by site name, as context_parallel.sites
//         mask_mod: {file: mods/document_window.cpp}   # or inline text
//         score_mod: "score - scalar0 * fabsf(float(q_idx - kv_idx))"
//         score_mod_grad: "1.0f"
//         aux: {file: document_ids.safetensors, tensors: [document_ids]}   # aux0, aux1, ... in order
//         scalars: [0.05]                                                  # scalar0, scalar1, ...
//         block_mask: {q_block_size: 32, kv_block_size: 32}               # or true (128 x 128)
//
// Every error names file:line:column (or the override that set the key): an unknown key (with
// "did you mean"), a site that is not an attention site of the config, a mod file that is missing
// or too long, an aux name the safetensors file lacks, an aux dtype other than int32 / int64 /
// float32, too many aux tensors or scalars, a bad block size.
#pragma once

#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/config.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attnrt {

struct FlexModSource {
  std::string text;    // the mod's body; "" when the site gives none
  std::string origin;  // "x.yaml:12:5" for inline text, "x.yaml:12:5 (mods/window.cpp)" for a file
};

struct FlexBlockMaskSpec {
  bool enabled = false;  // send a block mask with the call (the host builds it from mask_mod)
  int32_t q_block_size = 128, kv_block_size = 128;
  // mask_mod does not depend on b (on h): build one [1, ...] mask for every sequence (head), as
  // PyTorch's create_block_mask(B=None / H=None). A wrong claim gives a wrong mask, which `attnrt
  // run`'s reference (mask_mod on every pair) reports as a mismatch.
  bool broadcast_batch = false, broadcast_heads = false;
};

struct FlexSiteSpec {
  std::string site;   // the attention site's name
  std::string where;  // file:line:column of attnrt.flex.<site>
  FlexModSource score_mod, mask_mod, score_mod_grad;
  std::filesystem::path aux_file;      // the safetensors file the aux tensors came from
  std::vector<std::string> aux_names;  // in order: aux0, aux1, ...
  std::vector<HostTensor> aux;         // int32 (int64 is read as int32, checked) or float32, 1-4 dims
  std::vector<float> scalars;          // scalar0, scalar1, ...
  FlexBlockMaskSpec block_mask;

  // The block's source_name: where each mod came from, for compiler messages.
  std::string source_name() const;
  // One line for people: "mask_mod, score_mod (+grad), aux document_ids int32 [2, 96], 1 scalar, block mask 32x32".
  std::string summary() const;
};

using FlexSpecs = std::map<std::string, FlexSiteSpec>;  // by site name

// Reads attnrt.flex (absent: none). `site_names` are the config's attention sites. Throws
// attnrt::Error with file:line:column (see the top of this file).
FlexSpecs read_flex(const Config& config, const std::vector<std::string>& site_names);

// One call shape's flex block, built from a site's spec for a workload: the mods compiled for
// the host (the system C++ compiler, through the same HostCompiler the CPU plugin uses, cached
// on disk), the block mask built from mask_mod (every pair of every block evaluated: no visible
// pair: skipped; all visible: full; else partial), and the count of visible pairs. The object
// owns everything the block points at and is neither copied nor moved.
class FlexCall {
 public:
  // Throws attnrt::Error naming the site and its config position when the mods do not compile
  // (with the compiler's messages, lines counted from each mod's first line: "mask_mod:2: error")
  // or a mod reads an aux tensor outside its shape while the block mask is built.
  FlexCall(const FlexSiteSpec& spec, const Workload& workload);
  ~FlexCall();
  FlexCall(const FlexCall&) = delete;
  FlexCall& operator=(const FlexCall&) = delete;

  // Puts the block on desc's extension chain (desc.extensions = the block; nothing else was on
  // it), with its tensors on `device` (copied to a CUDA device on first use).
  void attach(attnrt_attention_desc& desc, DLDevice device = DLDevice{kDLCPU, 0});

  // The mods as the fp64 reference applies them (reference.hpp): the compiled score_mod and
  // score_mod_grad, and mask_mod evaluated on every pair (the block mask is not consulted, so a
  // wrong block mask shows as a mismatch). Valid while this object lives.
  ReferenceMods reference_mods() const;
  // Throws attnrt::Error when a mod read an aux tensor outside its shape during the reference.
  void check_reads() const;

  // Why a backward with these mods is refused ("" when it is not): a score_mod without
  // score_mod_grad, as the plugins refuse it.
  std::string backward_refusal() const;

  // (query, key) pairs that the descriptor's mask and mask_mod both leave visible, summed over
  // sequences and query heads; forward FLOPs 2 * (head_dim + head_dim_v) * that.
  double visible_pairs() const { return visible_pairs_; }
  double forward_flops() const { return forward_flops_; }
  // Blocks of the (built) block mask: skipped, partial, full; all zero without a block mask.
  int64_t skipped_blocks() const { return blocks_[0]; }
  int64_t partial_blocks() const { return blocks_[1]; }
  int64_t full_blocks() const { return blocks_[2]; }
  const FlexSiteSpec& spec() const { return spec_; }
  // "mask_mod, aux document_ids, block mask 32x32 (18 of 36 blocks skipped, 6 full)".
  std::string describe() const;

 private:
  struct State;
  const FlexSiteSpec& spec_;
  std::unique_ptr<State> s_;
  double visible_pairs_ = 0, forward_flops_ = 0;
  int64_t blocks_[3] = {0, 0, 0};
};

}  // namespace attnrt
