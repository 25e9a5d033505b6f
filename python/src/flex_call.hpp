// flex_attention's extension block (plugin_abi.h's attnrt_flex_attention, ABI 1.3) for
// attnrt._attnrt: a Python object that owns the block and everything it points to (the mods'
// source text, the aux tensors, the scalars, the block mask's tensors), so that a resolution, a
// forward, a backward or a create_block_mask call can put it on its descriptor's chain.
#ifndef ATTNRT_PYTHON_FLEX_CALL_HPP_
#define ATTNRT_PYTHON_FLEX_CALL_HPP_

#include "host_call.hpp"

#include <attnrt/plugin_abi.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnrt_python {

struct Flex {
  // The block mask's tensors, in attnrt_flex_attention's order (kv_num_blocks first).
  static constexpr size_t kMaskTensors = 8;

  std::optional<std::string> score_mod, mask_mod, score_mod_grad, source_name;
  std::vector<std::unique_ptr<Tensor>> aux;  // unique_ptr: the DLTensor addresses stay put
  std::vector<const DLTensor*> aux_ptrs;
  std::vector<float> scalars;
  std::array<Tensor, kMaskTensors> mask;
  attnrt_flex_attention block{};

  Flex(std::optional<std::string> score_mod_, std::optional<std::string> mask_mod_,
       std::optional<std::string> score_mod_grad_, std::optional<std::string> source_name_,
       const std::vector<nb::ndarray<>>& aux_, std::vector<float> scalars_, int32_t q_block_size, int32_t kv_block_size,
       const std::array<OptArray, kMaskTensors>& mask_)
      : score_mod(std::move(score_mod_)),
        mask_mod(std::move(mask_mod_)),
        score_mod_grad(std::move(score_mod_grad_)),
        source_name(std::move(source_name_)),
        scalars(std::move(scalars_)) {
    for (const nb::ndarray<>& a : aux_) {
      aux.push_back(std::make_unique<Tensor>());
      aux.back()->hold(a);
      aux_ptrs.push_back(&aux.back()->dl);
    }
    block.header = attnrt_extension{sizeof(attnrt_flex_attention), ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION, 0, nullptr};
    block.score_mod = score_mod ? score_mod->c_str() : nullptr;
    block.mask_mod = mask_mod ? mask_mod->c_str() : nullptr;
    block.score_mod_grad = score_mod_grad ? score_mod_grad->c_str() : nullptr;
    block.source_name = source_name ? source_name->c_str() : nullptr;
    block.num_aux = static_cast<int32_t>(aux_ptrs.size());
    block.aux = aux_ptrs.empty() ? nullptr : aux_ptrs.data();
    block.num_scalars = static_cast<int32_t>(scalars.size());
    block.scalars = scalars.empty() ? nullptr : scalars.data();
    block.q_block_size = q_block_size;
    block.kv_block_size = kv_block_size;
    const DLTensor** fields[kMaskTensors] = {&block.kv_num_blocks,     &block.kv_indices,    &block.full_kv_num_blocks,
                                             &block.full_kv_indices,   &block.q_num_blocks,  &block.q_indices,
                                             &block.full_q_num_blocks, &block.full_q_indices};
    for (size_t i = 0; i < kMaskTensors; ++i) {
      if (!mask_[i]) continue;
      mask[i].hold(*mask_[i]);
      *fields[i] = &mask[i].dl;
    }
  }
  Flex(const Flex&) = delete;  // the block points into this object
  Flex& operator=(const Flex&) = delete;

  // desc with this block as its extension chain (the caller's desc carries none).
  attnrt_attention_desc on(const attnrt_attention_desc& desc) const {
    attnrt_attention_desc d = desc;
    d.extensions = &block.header;
    return d;
  }
};

// flex_bindings.cpp: the Flex class; Backend's flex_forward, flex_backward and create_block_mask.
void bind_flex(nb::module_& m);
void bind_flex_calls(nb::class_<Backend>& backend);

}  // namespace attnrt_python

#endif  // ATTNRT_PYTHON_FLEX_CALL_HPP_
