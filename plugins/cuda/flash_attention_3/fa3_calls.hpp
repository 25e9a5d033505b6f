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

#include <algorithm>
#include <string>

namespace attnrt::cuda::fa3 {

template <class Policy, class HeadDims>
struct Calls {
  static constexpr size_t kRowAlignment = 16;  // TMA: 16-byte aligned rows and strides

  // The compiled head_dim whose forward kernel runs a call at `head_dim` (0 when none): itself,
  // or the smallest compiled one above it where padding is at most a quarter of its columns
  // (head_dim 96 on the 128 kernel). The padded columns never leave memory: TMA fills a box's
  // columns past the tensor's head_dim with zeros, so they add 0 to Q K^T and give O columns
  // that are not stored. TMA needs 16-byte rows, so head_dim is a multiple of 8.
  static int forward_kernel_dim(int head_dim) {
    if (head_dim <= 0 || head_dim % 8 != 0) return 0;
    int best = 0;
    for (int hd : HeadDims::kList) {
      if (hd >= head_dim && 4 * head_dim >= 3 * hd && (best == 0 || hd < best)) best = hd;
    }
    return best;
  }

  // Queries per sequence up to which a paged call is decode (paged_attention's range).
  static constexpr int kDecodeQueries = 16;

  // Why the forward cannot run a call ("" when it can): its head_dim, a paged cache whose pages
  // do not hold whole key blocks (each block is one TMA box of one page), or a paged decode.
  static std::string forward_gap(const attnrt_attention_desc& d) {
    const int kernel_dim = forward_kernel_dim(d.head_dim);
    if (kernel_dim == 0) {
      return "head_dim " + std::to_string(d.head_dim) + " has no forward kernel: compiled " + HeadDims::describe() +
             ", and a smaller multiple of 8 runs on the next one above it only where at most a quarter of that "
             "kernel's columns are padding";
    }
    if (d.is_paged && d.seqlen_q <= kDecodeQueries) {
      return "paged KV with decode-sized queries (seqlen_q " + std::to_string(d.seqlen_q) +
             " <= " + std::to_string(kDecodeQueries) +
             "): this kernel reads the cache once per query head in blocks of 64 or more query rows; "
             "paged_attention reads each page once per KV head";
    }
    if (d.is_paged) {
      int block = 0;
      HeadDims::dispatch(kernel_dim, [&](auto hd) { block = ForwardTiles<decltype(hd)::value>::kBN; });
      if (d.page_size <= 0 || d.page_size % block != 0) {
        return "paged KV with page_size " + std::to_string(d.page_size) + ": the head_dim " +
               std::to_string(d.head_dim) + " kernel loads blocks of " + std::to_string(block) +
               " keys, each from one page, so page sizes must be multiples of " + std::to_string(block);
      }
    }
    return "";
  }

  // Why this family's backward cannot run a call ("" when it can): its wgmma tiles exist for
  // head_dim 64 and 128 (not padded); a deterministic call orders its dQ additions
  // (fa3_backward.cuh), but not dsinks' with sinks.
  static std::string backward_gap(const attnrt_attention_desc& d) {
    if (d.is_paged) return "no backward through a paged KV cache";
    if (d.deterministic && d.has_sinks) return "no deterministic backward with sinks on these kernels";
    bool tiles = false;
    if (HeadDims::contains(d.head_dim)) {
      HeadDims::dispatch(d.head_dim, [&](auto hd) { tiles = BackwardTiles<decltype(hd)::value>::kExists; });
    }
    return tiles ? "" : "no backward at head_dim " + std::to_string(d.head_dim) + " (backward tiles: 64, 128)";
  }

  // The forward's persistent grid takes tiles from a counter where their lengths differ
  // (fa3_launch.cuh): 4 bytes of workspace, zeroed by the launch; elsewhere none.
  static bool forward_schedules(const attnrt_attention_desc& d) {
    return d.causal || d.window_left >= 0 || d.window_right >= 0 || d.is_varlen || d.is_paged;  // paged: seqused_k
  }
  static constexpr size_t kForwardWorkspace = 256;

  static size_t workspace_size(const attnrt_attention_desc& d, bool backward) {
    if (!backward) return forward_schedules(d) ? kForwardWorkspace : 0;
    if (!d.deterministic) return BackwardWorkspace::size(d, backward);
    return semaphore_offset(d) + semaphore_bytes(d);
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
    const hopper::CallLayout l = hopper::call_layout(d, a.q, a.k);
    // The maps span the call's head_dim; a padded kernel's boxes read zeros past it.
    HeadDims::dispatch(forward_kernel_dim(d.head_dim), [&](auto hd) {
      constexpr int HD = decltype(hd)::value;
      using Tiles = ForwardTiles<HD>;
      ForwardMaps maps;
      maps.q = l.map("q", p.q, p, l.q_rows, p.heads_q, d.head_dim, Tiles::kBM);
      maps.k = l.map("k", p.k, p, l.k_rows, p.heads_kv, d.head_dim, Tiles::kBN, l.k_batch);
      maps.v = l.map("v", p.v, p, l.k_rows, p.heads_kv, d.head_dim, Tiles::kBN, l.k_batch);
      p.o_by_tma = l.out_map(p, d.head_dim, &maps.o) ? 1 : 0;
      check_cuda(run_forward<Policy, HD>(p, maps, l.bf16, static_cast<cudaStream_t>(e.stream)), what);
    });
  }

  static void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e,
                       const char* what) {
    if (const std::string gap = backward_gap(d); !gap.empty()) throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, gap);
    use_device(d);
    AttentionParams p = make_params(d, a, kRowAlignment);
    BackwardWorkspace::bind(accumulating(d), e, p);  // dq_accum, deterministic calls too
    if (d.deterministic) {
      sdk::require_workspace(e, workspace_size(d, true), 0);
      p.dq_semaphore = reinterpret_cast<int32_t*>(static_cast<unsigned char*>(e.workspace) + semaphore_offset(d));
    }
    const cudaStream_t stream = static_cast<cudaStream_t>(e.stream);
    if (BackwardWorkspace::nothing_to_differentiate(p, stream, what)) return;
    const hopper::CallLayout l = hopper::call_layout(d, a.q, a.k);
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
  // A deterministic call's workspace: a non-deterministic call's (D, dq_accum, dsinks' rows),
  // then one int32 counter per (sequence, q head, query block) (params.hpp's dq_semaphore),
  // counted for the smallest backward query block.
  static attnrt_attention_desc accumulating(const attnrt_attention_desc& d) {
    attnrt_attention_desc a = d;
    a.deterministic = 0;
    return a;
  }
  static size_t semaphore_offset(const attnrt_attention_desc& d) {
    return BackwardWorkspace::aligned(BackwardWorkspace::size(accumulating(d), true));
  }
  static size_t semaphore_bytes(const attnrt_attention_desc& d) {
    constexpr size_t kRows = std::min(BackwardTiles<64>::kBM, BackwardTiles<128>::kBM);
    return size_t(d.batch) * size_t(d.heads_q) * ((size_t(d.seqlen_q) + kRows - 1) / kRows) * sizeof(int32_t);
  }
};

}  // namespace attnrt::cuda::fa3
