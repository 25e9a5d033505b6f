// flex_attention for attnrt._attnrt (issue 15): the Flex block (flex_call.hpp) and the calls that
// carry it: a forward and a backward with the block on the descriptor's chain, and
// create_block_mask (host_api.h's attnrt_backend_create_block_mask, plugin ABI 1.4). Tensors
// are DLPack, in the ABI's layout (plugin_abi.h); the GIL is released during each call.
#include "flex_call.hpp"
#include "host_call.hpp"

#include <attnrt/host_api.h>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnrt_python {

void bind_flex(nb::module_& m) {
  nb::class_<Flex>(m, "Flex")
      .def(
          "__init__",
          [](Flex* self, std::optional<std::string> score_mod, std::optional<std::string> mask_mod,
             std::optional<std::string> score_mod_grad, std::optional<std::string> source_name,
             const std::vector<nb::ndarray<>>& aux, std::vector<float> scalars, int32_t q_block_size,
             int32_t kv_block_size, OptArray kv_num_blocks, OptArray kv_indices, OptArray full_kv_num_blocks,
             OptArray full_kv_indices, OptArray q_num_blocks, OptArray q_indices, OptArray full_q_num_blocks,
             OptArray full_q_indices) {
            new (self) Flex(std::move(score_mod), std::move(mask_mod), std::move(score_mod_grad),
                            std::move(source_name), aux, std::move(scalars), q_block_size, kv_block_size,
                            {kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, q_num_blocks, q_indices,
                             full_q_num_blocks, full_q_indices});
          },
          nb::arg("score_mod").none() = nb::none(), nb::arg("mask_mod").none() = nb::none(),
          nb::arg("score_mod_grad").none() = nb::none(), nb::arg("source_name").none() = nb::none(),
          nb::arg("aux") = std::vector<nb::ndarray<>>{}, nb::arg("scalars") = std::vector<float>{},
          nb::arg("q_block_size") = 128, nb::arg("kv_block_size") = 128, nb::arg("kv_num_blocks").none() = nb::none(),
          nb::arg("kv_indices").none() = nb::none(), nb::arg("full_kv_num_blocks").none() = nb::none(),
          nb::arg("full_kv_indices").none() = nb::none(), nb::arg("q_num_blocks").none() = nb::none(),
          nb::arg("q_indices").none() = nb::none(), nb::arg("full_q_num_blocks").none() = nb::none(),
          nb::arg("full_q_indices").none() = nb::none(),
          "plugin_abi.h's attnrt_flex_attention (ABI 1.3), owning what it points to: the mods' C++ source "
          "bodies (score_mod, mask_mod, score_mod_grad; None: absent), the name errors cite for them, aux "
          "tensors (DLPack: int32, int64 or float32, 1-4 dims, on the call's device; read as aux0, aux1, ...), "
          "float scalars (scalar0, ...), the block sizes and the block mask's int32 tensors (PyTorch's "
          "BlockMask; kv_num_blocks None: no block mask). Pass it to Runtime.resolve and to the calls.")
      .def_prop_ro("num_aux", [](const Flex& f) { return f.block.num_aux; })
      .def_prop_ro("num_scalars", [](const Flex& f) { return f.block.num_scalars; })
      .def_prop_ro("has_block_mask", [](const Flex& f) { return f.block.kv_num_blocks != nullptr; });
}

void bind_flex_calls(nb::class_<Backend>& backend) {
  backend
      .def(
          "flex_forward",
          [](Backend& self, const attnrt_attention_desc& desc, const Flex& flex, nb::ndarray<> q, nb::ndarray<> k,
             nb::ndarray<> v, nb::ndarray<> out, OptArray lse, OptArray workspace, uintptr_t stream,
             int32_t num_threads) {
            Call c;
            const attnrt_forward_args a = dense_forward_args(c, q, k, v, out, lse, std::nullopt);
            const attnrt_attention_desc d = flex.on(desc);
            call_backend(self, d, a, workspace, stream, num_threads, attnrt_backend_forward,
                         attnrt_backend_forward_with_workspace);
          },
          nb::arg("desc"), nb::arg("flex"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"),
          nb::arg("lse").none() = nb::none(), nb::arg("workspace").none() = nb::none(), nb::arg("stream") = 0,
          nb::arg("num_threads") = 0,
          "forward with the Flex block on desc's chain. workspace: None (attnrt allocates) or a byte tensor of "
          "workspace_size(desc, False, num_threads, flex) + 255 bytes.")
      .def(
          "flex_backward",
          [](Backend& self, const attnrt_attention_desc& desc, const Flex& flex, nb::ndarray<> dout, nb::ndarray<> q,
             nb::ndarray<> k, nb::ndarray<> v, nb::ndarray<> out, nb::ndarray<> lse, nb::ndarray<> dq, nb::ndarray<> dk,
             nb::ndarray<> dv, OptArray workspace, uintptr_t stream, int32_t num_threads) {
            Call c;
            const attnrt_backward_args a =
                dense_backward_args(c, dout, q, k, v, out, lse, dq, dk, dv, std::nullopt, std::nullopt);
            const attnrt_attention_desc d = flex.on(desc);
            call_backend(self, d, a, workspace, stream, num_threads, attnrt_backend_backward,
                         attnrt_backend_backward_with_workspace);
          },
          nb::arg("desc"), nb::arg("flex"), nb::arg("dout"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("out"),
          nb::arg("lse"), nb::arg("dq"), nb::arg("dk"), nb::arg("dv"), nb::arg("workspace").none() = nb::none(),
          nb::arg("stream") = 0, nb::arg("num_threads") = 0,
          "backward with the Flex block on desc's chain (a score_mod needs its score_mod_grad).")
      .def(
          "create_block_mask",
          [](Backend& self, const attnrt_attention_desc& desc, const Flex& flex, nb::ndarray<> kv_num_blocks,
             nb::ndarray<> kv_indices, OptArray full_kv_num_blocks, OptArray full_kv_indices, OptArray q_num_blocks,
             OptArray q_indices, OptArray full_q_num_blocks, OptArray full_q_indices, uintptr_t stream,
             int32_t num_threads) {
            Call c;
            attnrt_block_mask_args a{};
            a.struct_size = sizeof a;
            a.kv_num_blocks = c.add(kv_num_blocks);
            a.kv_indices = c.add(kv_indices);
            a.full_kv_num_blocks = c.add(full_kv_num_blocks);
            a.full_kv_indices = c.add(full_kv_indices);
            a.q_num_blocks = c.add(q_num_blocks);
            a.q_indices = c.add(q_indices);
            a.full_q_num_blocks = c.add(full_q_num_blocks);
            a.full_q_indices = c.add(full_q_indices);
            call_with_workspace(self, flex.on(desc), a, std::nullopt, stream, num_threads,
                                attnrt_backend_create_block_mask);
          },
          nb::arg("desc"), nb::arg("flex"), nb::arg("kv_num_blocks"), nb::arg("kv_indices"),
          nb::arg("full_kv_num_blocks").none() = nb::none(), nb::arg("full_kv_indices").none() = nb::none(),
          nb::arg("q_num_blocks").none() = nb::none(), nb::arg("q_indices").none() = nb::none(),
          nb::arg("full_q_num_blocks").none() = nb::none(), nb::arg("full_q_indices").none() = nb::none(),
          nb::arg("stream") = 0, nb::arg("num_threads") = 0,
          "PyTorch's create_block_mask (plugin ABI 1.4): evaluates flex's mask_mod (flex without a block mask "
          "of its own) on every pair of every q_block_size x kv_block_size block and writes the BlockMask's "
          "int32 tensors, [1 or batch, 1 or heads_q, ...] (plugin_abi.h's attnrt_block_mask_args).");
}

}  // namespace attnrt_python
