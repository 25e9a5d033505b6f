// What a cuDNN SDPA graph depends on, read off one attention call: the key of the plugin's graph
// cache (sdpa_cudnn_graphs.hpp). Plain C++ on the SDK's types (no CUDA, no cuDNN), so that the
// mapping from the ABI's descriptor to cuDNN's graph is tested where no GPU is (tests/plugins).
//
// The mapping (cuDNN frontend, "Attention" in docs/operations/Attention.md, and its
// attn_score_modifiers.h sliding_window_mask):
//   q, k, v, out  [batch, seqlen, heads, dim] -> cuDNN dims (b, h, s, d) with the tensor's own
//                 strides (batch, head, row, 1): BSHD as given, no copies
//   causal        -> diagonal alignment BOTTOM_RIGHT, right bound 0
//   window_right  -> right bound R: key j kept when j <= i + (s_kv - s_q) + R
//   window_left W -> left bound W + 1: cuDNN keeps j when j + left_bound - (s_kv - s_q) > i,
//                    i.e. j >= i + (s_kv - s_q) - W, the ABI's rule
//   varlen        -> padding mask with per-sequence lengths and ragged offsets (b strides unused)
//   return_lse    -> generate_stats (Stats, natural log, float32)
//   deterministic -> SDPA_backward_attributes::set_deterministic_algorithm(true)
//   paged         -> forward only (cuDNN 9.15+): k, v as cuDNN's containers [num_pages, h_kv,
//                    page_size, d] with the caches' own strides, block_table as both page tables
//                    [b, 1, max_pages, 1], seqused_k as seq_len_kv (padding mask), the masks
//                    bottom-right against each sequence's keys
//   sinks         -> sink_token [1, h_q, 1, 1] float32 (cuDNN 9.13+: a per-head logit in every
//                    row's softmax max and sum, so Stats include it, as the ABI's lse does);
//                    backward also dsink_token [1, h_q, 1, 1], reduced over batch and rows
#pragma once

#include <attnrt/plugin_abi.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace attnrt::plugins::sdpa_cuda {

// Element strides of one [batch, seqlen, heads, dim] (or varlen [total, heads, dim]) tensor.
struct Strides {
  int64_t batch = 0;  // 0 when varlen (rows start at ragged offsets)
  int64_t row = 0;
  int64_t head = 0;
  bool operator==(const Strides&) const = default;
};

// Every field is 64-bit so that the key has no padding (hashed byte by byte).
struct GraphKey {
  int64_t backward = 0;  // 0: forward graph, 1: backward graph
  int64_t dtype = 0;     // attnrt_dtype
  int64_t batch = 0, heads_q = 0, heads_kv = 0;
  int64_t seqlen_q = 0, seqlen_k = 0;  // varlen: the maxima
  int64_t head_dim = 0, head_dim_v = 0;
  int64_t scale_bits = 0;    // softmax_scale's float bits (cuDNN takes it as a graph constant)
  int64_t right_bound = -1;  // -1: none; else cuDNN's diagonal_band_right_bound
  int64_t left_bound = -1;   // -1: none; else cuDNN's diagonal_band_left_bound (window_left + 1)
  int64_t varlen = 0;
  int64_t stats = 0;          // forward: generate_stats
  int64_t deterministic = 0;  // backward: deterministic algorithm
  int64_t sinks = 0;          // sink_token (and, backward, dsink_token)
  int64_t paged = 0;          // k, v are pages (forward): the fields below describe them
  int64_t num_pages = 0, page_size = 0, max_pages = 0, table_stride = 0;
  int64_t k_page_stride = 0, v_page_stride = 0;  // elements between pages (k.row, k.head: within one)
  int64_t device = 0, sm = 0;
  Strides q, k, v, out;      // forward and backward
  Strides dout, dq, dk, dv;  // backward only
  bool operator==(const GraphKey&) const = default;
};

struct GraphKeyHash {
  size_t operator()(const GraphKey& k) const noexcept;
};

// The key of the call's graph. With args nullptr (workspace_size and supports, which see no
// tensors), the strides are those of compact tensors in the ABI's layout.
GraphKey forward_key(const attnrt_attention_desc& d, const attnrt_forward_args* a);
GraphKey backward_key(const attnrt_attention_desc& d, const attnrt_backward_args* a);

// One line for messages and the build trace: "fwd bf16 b2 h8/2 s512x1024 d128/128 ...".
std::string describe(const GraphKey& k);

}  // namespace attnrt::plugins::sdpa_cuda
