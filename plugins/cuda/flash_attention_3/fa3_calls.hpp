// The host side of a plugin built on flash_attention_3's kernels for one score policy: the TMA
// descriptors of a call and the forward from the ABI's descriptor to a kernel instantiation.
// flash_attention_3 (StandardScores) is a class that declares its name and capabilities and
// forwards here; sink's sm_90a path will be another.
#pragma once

#include "fa3_launch.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_cuda/cuda_check.hpp>
#include <attnrt_cuda/hopper/tensor_map.hpp>
#include <attnrt_cuda/make_params.hpp>

#include <cuda_runtime_api.h>

namespace attnrt::cuda::fa3 {

template <class Policy, class HeadDims>
struct Calls {
  static constexpr size_t kRowAlignment = 16;  // TMA: 16-byte aligned rows and strides

  static void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e,
                      const char* what) {
    use_device(d);
    const AttentionParams p = make_params(d, a, kRowAlignment);
    if (p.seqlen_q == 0 || p.batch == 0) return;
    const bool bf16 = d.dtype == ATTNRT_DTYPE_BF16;
    // Packed (varlen) tensors are one sequence of all rows to TMA; the kernel adds each
    // sequence's first row to its coordinates.
    const bool varlen = d.is_varlen != 0;
    const int batch = varlen ? 1 : p.batch;
    const int64_t q_rows = varlen ? a.q->shape[0] : p.seqlen_q;
    const int64_t k_rows = varlen ? a.k->shape[0] : p.seqlen_k;
    HeadDims::dispatch(d.head_dim, [&](auto hd) {
      constexpr int HD = decltype(hd)::value;
      using Tiles = ForwardTiles<HD>;
      ForwardMaps maps;
      maps.q = hopper::make_tensor_map("q", p.q, bf16, q_rows, p.heads_q, batch, HD, Tiles::kBM, p.q.data);
      maps.k = hopper::make_tensor_map("k", p.k, bf16, k_rows, p.heads_kv, batch, HD, Tiles::kBN, p.q.data);
      maps.v = hopper::make_tensor_map("v", p.v, bf16, k_rows, p.heads_kv, batch, HD, Tiles::kBN, p.q.data);
      check_cuda(run_forward<Policy, HD>(p, maps, bf16, static_cast<cudaStream_t>(e.stream)), what);
    });
  }
};

}  // namespace attnrt::cuda::fa3
