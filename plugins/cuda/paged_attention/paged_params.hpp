// The plain-old-data description of one paged attention call as the paged_attention kernels see
// it (host and device). The score fields, q/out, lse, cu_seqlens_q, seqused_k and sinks are the
// shared AttentionParams (params.hpp), so the score policies (score_policy.cuh, sink_policy.cuh)
// read them unchanged; the paged cache is described beside them in vLLM's PagedAttention terms:
//   k, v         [num_pages, page_size, heads_kv, head_dim]  (strides free; k and v may be two
//                views into one allocation)
//   block_table  [batch, max_pages_per_seq] int32: page of token t of sequence b is
//                block_table[b, t / page_size]; entries past ceil(seqused_k[b] / page_size) are
//                never read (Hugging Face pads them with -1)
//   seqused_k    [batch] int32: keys in the cache per sequence (the queries are its last ones:
//                causal is aligned bottom-right)
// Split-KV (FlashDecoding, Dao et al. 2023): each sequence's keys are cut into num_splits
// contiguous ranges of whole key tiles (each in `groups` halves that one block merges itself);
// each split writes its normalized partial output and its LSE to the workspace, and a combine
// kernel merges them by their LSE.
#pragma once

#include <attnrt_cuda/params.hpp>

#include <cstdint>

namespace attnrt::cuda::paged {

struct PagedCache {
  void* data = nullptr;
  int64_t page_stride = 0;  // elements between pages
  int64_t row_stride = 0;   // elements between the tokens of a page
  int64_t head_stride = 0;  // elements between heads
};

struct PagedParams {
  AttentionParams attn;  // q, out, lse, cu_seqlens_q (varlen queries), seqused_k, sinks, score rule
  PagedCache k, v;
  const int32_t* block_table = nullptr;
  int64_t table_stride = 0;  // elements between block_table's rows
  int32_t page_size = 0;
  int32_t page_shift = -1;       // log2(page_size) when a power of two (shift and mask), else -1
  int32_t group = 1;             // heads_q / heads_kv: the query heads that share one KV head
  int32_t row_blocks = 0;        // blocks of kRows (token, head) rows per (sequence, KV head)
  int32_t num_splits = 1;        // 1: the kernel writes out and lse itself
  int32_t groups = 1;            // 2: each block streams its split's keys as two halves (paged_attention.cuh)
  float* partial_out = nullptr;  // [num_splits][heads_q * total_q][head_dim] float (split-KV)
  float* partial_lse = nullptr;  // [num_splits][heads_q * total_q] float, natural log
};

// The KV-cache append (vLLM's reshape_and_cache, FlashInfer's append_paged_kv_cache): token n of
// k_new / v_new [num_tokens, heads_kv, head_dim] goes to page slot_mapping[n] / page_size, row
// slot_mapping[n] % page_size; a negative slot (a padding token) is skipped.
struct AppendParams {
  const void* k_new = nullptr;
  const void* v_new = nullptr;
  int64_t k_new_row_stride = 0, k_new_head_stride = 0;
  int64_t v_new_row_stride = 0, v_new_head_stride = 0;
  const int64_t* slot_mapping = nullptr;  // [num_tokens]
  PagedCache k_cache, v_cache;            // written
  int64_t num_tokens = 0, num_pages = 0;
  int32_t page_size = 0, heads_kv = 0, head_dim = 0, head_dim_v = 0;
};

}  // namespace attnrt::cuda::paged
