// The host side of a plugin built on flash_attention_3's kernels for one score policy: the TMA
// descriptors of a call, the backward workspace (backward_workspace.hpp), and the forward and
// backward from the ABI's descriptor to a kernel instantiation.
// flash_attention_3 (StandardScores) is a class that declares its name and capabilities and
// forwards here; sink's sm_90a path will be another.
#pragma once

#include "fa3_launch.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_cuda/backward_workspace.hpp>
#include <attnrt_cuda/cuda_check.hpp>
#include <attnrt_cuda/hopper/tensor_map.hpp>
#include <attnrt_cuda/make_params.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace attnrt::cuda::fa3 {

template <class Policy, class HeadDims>
struct Calls {
  static constexpr size_t kRowAlignment = 16;  // TMA: 16-byte aligned rows and strides

  // Why this family's backward cannot run a call ("" when it can): its wgmma tiles exist for
  // head_dim 64 and 128, and its dQ atomics are not deterministic.
  static std::string backward_gap(const attnrt_attention_desc& d) {
    if (d.deterministic) return "no deterministic backward (dQ is accumulated by atomics)";
    bool tiles = false;
    HeadDims::dispatch(d.head_dim, [&](auto hd) { tiles = BackwardTiles<decltype(hd)::value>::kExists; });
    return tiles ? "" : "no backward at head_dim " + std::to_string(d.head_dim) + " (backward tiles: 64, 128)";
  }

  // The forward's persistent grid takes tiles from a counter where their lengths differ
  // (fa3_launch.cuh): 4 bytes of workspace, zeroed by the launch; elsewhere none.
  static bool forward_schedules(const attnrt_attention_desc& d) {
    return d.causal || d.window_left >= 0 || d.window_right >= 0 || d.is_varlen;
  }
  static constexpr size_t kForwardWorkspace = 256;

  static size_t workspace_size(const attnrt_attention_desc& d, bool backward) {
    if (!backward) return forward_schedules(d) ? kForwardWorkspace : 0;
    return BackwardWorkspace::size(d, backward);
  }

  static void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e,
                      const char* what) {
    use_device(d);
    AttentionParams p = make_params(d, a, kRowAlignment);
    if (p.seqlen_q == 0 || p.batch == 0) return;
    if (forward_schedules(d)) {
      sdk::require_workspace(e, kForwardWorkspace, 0);
      p.tile_counter = static_cast<int32_t*>(e.workspace);
    }
    const Layout l = layout(d, a.q, a.k);
    HeadDims::dispatch(d.head_dim, [&](auto hd) {
      constexpr int HD = decltype(hd)::value;
      using Tiles = ForwardTiles<HD>;
      ForwardMaps maps;
      maps.q = l.map("q", p.q, p, l.q_rows, p.heads_q, HD, Tiles::kBM);
      maps.k = l.map("k", p.k, p, l.k_rows, p.heads_kv, HD, Tiles::kBN);
      maps.v = l.map("v", p.v, p, l.k_rows, p.heads_kv, HD, Tiles::kBN);
      check_cuda(run_forward<Policy, HD>(p, maps, l.bf16, static_cast<cudaStream_t>(e.stream)), what);
    });
  }

  static void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e,
                       const char* what) {
    if (const std::string gap = backward_gap(d); !gap.empty()) throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, gap);
    use_device(d);
    AttentionParams p = make_params(d, a, kRowAlignment);
    BackwardWorkspace::bind(d, e, p);
    const cudaStream_t stream = static_cast<cudaStream_t>(e.stream);
    if (BackwardWorkspace::nothing_to_differentiate(p, stream, what)) return;
    const Layout l = layout(d, a.q, a.k);
    HeadDims::dispatch(d.head_dim, [&](auto hd) {
      constexpr int HD = decltype(hd)::value;
      if constexpr (BackwardTiles<HD>::kExists) {
        using Tiles = BackwardTiles<HD>;
        BackwardMaps maps;
        maps.q = l.map("q", p.q, p, l.q_rows, p.heads_q, HD, Tiles::kBM);
        maps.dout = l.map("dout", p.dout, p, l.q_rows, p.heads_q, HD, Tiles::kBM);
        maps.k = l.map("k", p.k, p, l.k_rows, p.heads_kv, HD, Tiles::kBN);
        maps.v = l.map("v", p.v, p, l.k_rows, p.heads_kv, HD, Tiles::kBN);
        check_cuda(run_backward<Policy, HD>(p, maps, l.bf16, stream), what);
      }
    });
  }

 private:
  // Packed (varlen) tensors are one sequence of all rows to TMA; the kernels add each sequence's
  // first row to their coordinates.
  struct Layout {
    bool bf16;
    int batch;
    int64_t q_rows, k_rows;
    CUtensorMap map(const char* name, const TensorRef& t, const AttentionParams& p, int64_t rows, int heads, int hd,
                    int box_rows) const {
      return hopper::make_tensor_map(name, t, bf16, rows, heads, batch, hd, box_rows, p.q.data);
    }
  };
  static Layout layout(const attnrt_attention_desc& d, const DLTensor* q, const DLTensor* k) {
    const bool varlen = d.is_varlen != 0;
    return {d.dtype == ATTNRT_DTYPE_BF16, varlen ? 1 : d.batch, varlen ? q->shape[0] : d.seqlen_q,
            varlen ? k->shape[0] : d.seqlen_k};
  }
};

}  // namespace attnrt::cuda::fa3
