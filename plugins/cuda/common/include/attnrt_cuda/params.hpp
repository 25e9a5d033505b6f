// The plain-old-data description of one attention call as the CUDA kernels see it: device
// pointers, element strides and the score rule. Built on the host by make_params() (launch.hpp)
// from the ABI's descriptor and DLPack tensors; read on the device. Layouts are the ABI's
// (FlashAttention's): q [batch, seqlen, heads, head_dim] or packed [total, heads, head_dim].
#pragma once

#include <cstdint>

namespace attnrt::cuda {

struct TensorRef {
  void* data = nullptr;
  int64_t batch_stride = 0;  // elements; unused when varlen (rows then start at cu_seqlens[b])
  int64_t row_stride = 0;    // elements between consecutive tokens
  int64_t head_stride = 0;   // elements between consecutive heads
};

struct AttentionParams {
  TensorRef q, k, v, out;
  TensorRef dout, dq, dk, dv;             // backward only
  float* lse = nullptr;                   // [batch, heads_q, seqlen_q] or varlen [heads_q, total_q]
  float* softmax_d = nullptr;             // backward workspace: rowsum(dout * out), laid out like lse
  float* dq_accum = nullptr;              // backward workspace when not deterministic: fp32 dQ / softmax_scale,
                                          // [lse's rows][head_dim], accumulated by atomics
  const int32_t* cu_seqlens_q = nullptr;  // varlen; nullptr otherwise
  const int32_t* cu_seqlens_k = nullptr;
  const int32_t* seqused_k = nullptr;  // optional: keys used per sequence
  const float* sinks = nullptr;        // [heads_q] sink logits (natural log), when the call has sinks
  float* dsinks = nullptr;             // backward with sinks: [heads_q], written whole
  float* dsink_rows = nullptr;         // backward workspace with sinks: each row's share of dsinks,
                                       // laid out like lse
  int32_t batch = 0, heads_q = 0, heads_kv = 0;
  int32_t seqlen_q = 0, seqlen_k = 0;  // per sequence; varlen: maxima
  int64_t total_q = 0;                 // varlen: rows of q (lse's second extent)
  int32_t head_dim = 0, head_dim_v = 0;
  float softmax_scale = 0;
  float softcap = 0;                            // 0: off
  int32_t window_left = -1, window_right = -1;  // causal folded into window_right = 0
  int32_t* tile_counter = nullptr;              // forward workspace: a persistent grid's next tile (zeroed)
  // flash_attention_3's deterministic backward: per (sequence, q head, query block of the
  // kernel's BM rows), how many key blocks have added their dQ to dq_accum (zeroed by the launch).
  int32_t* dq_semaphore = nullptr;
  // Paged KV (the ABI's is_paged; flash_attention_3's forward): k and v are [num_pages,
  // page_size, heads_kv, dim], and key t of sequence b is row t % page_size of page
  // block_table[b * block_table_stride + t / page_size]; seqused_k gives each sequence's keys.
  const int32_t* block_table = nullptr;
  int64_t block_table_stride = 0;
  int32_t page_size = 0;
  // flash_attention_3's forward: O leaves by TMA stores through the launch's O map (1), where
  // the call has one (not packed: a box would cross into the next sequence's rows), else by
  // every consumer thread's stores (0).
  int32_t o_by_tma = 0;
};

}  // namespace attnrt::cuda
