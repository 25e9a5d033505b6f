// fp64 reference attention, written from the definition in plugin_abi.h's comment and
// independently of every plugin (no shared kernel code): the yardstick for numerics in the CLI
// and the tests. Works on CPU tensors in any of the ABI's layouts (padded, varlen, paged).
#pragma once

#include <attnrt/plugin_abi.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace attnrt {

// flex_attention's mods as the reference applies them (plugin_abi.h, attnrt_flex_attention):
// written by a test as plain C++ next to the mod source it checks, so that the reference stays
// independent of the compiled mods. b is the sequence, h the query head, i and j positions in
// the sequence; s the descriptor's score. Empty members are the identity, "all visible", 1.
struct ReferenceMods {
  std::function<double(double s, int64_t b, int64_t h, int64_t i, int64_t j)> score;
  std::function<bool(int64_t b, int64_t h, int64_t i, int64_t j)> visible;           // mask_mod and block mask
  std::function<double(double s, int64_t b, int64_t h, int64_t i, int64_t j)> grad;  // d score / d s
};

struct ReferenceForward {
  std::vector<double> out;  // row-major, shaped like args.out
  std::vector<double> lse;  // row-major, shaped like the ABI's lse ([batch, heads_q, seqlen_q] or
                            // [heads_q, total_q]); -inf for rows that see no key and no sink
};

struct ReferenceBackward {
  std::vector<double> dq, dk, dv;  // shaped like q, k, v
  std::vector<double> dsinks;      // [heads_q], empty without sinks
};

// Forward in fp64 from the call's (low-precision) inputs. args.out and args.lse are not read;
// their shapes define the result's layout. Dropout is refused (throws attnrt::Error). The tensors
// must be in host memory; desc.device may name another device (the call being checked).
// `mods` (may be null) adds flex_attention's score map and mask on top of the descriptor's.
ReferenceForward reference_forward(const attnrt_attention_desc& desc, const attnrt_forward_args& args,
                                   const ReferenceMods* mods = nullptr);

// Gradients of sum(out * dout) in fp64, from q, k, v and dout alone (p recomputed, not taken
// from any plugin's LSE).
ReferenceBackward reference_backward(const attnrt_attention_desc& desc, const attnrt_forward_args& args,
                                     const DLTensor& dout, const ReferenceMods* mods = nullptr);

// Largest |t - ref| over all elements (t read through its strides); NaN anywhere in t gives NaN.
double max_abs_error(const DLTensor& t, const std::vector<double>& ref);
double max_abs_error(const std::vector<double>& a, const std::vector<double>& b);
double max_abs(const std::vector<double>& v);

}  // namespace attnrt
