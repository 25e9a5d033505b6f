// Small device kernels the cuDNN path needs around a varlen call (host-callable, C++17 so that
// both the nvcc-built kernel library and the C++20 plugin include it). cuDNN's SDPA graph reads
// packed (THD) tensors through per-sequence lengths [batch] and ragged offsets [batch + 1] in
// elements (cuDNN frontend docs, "Attention": padding mask and ragged tensors); attnrt's ABI
// gives cu_seqlens (token prefix sums), so these are derived on the device, on the call's
// stream, into the workspace: no host round trip, nothing allocated.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace attnrt::cuda::sdpa {

// One packed tensor's ragged offsets: offsets[b] = cu_seqlens[b] * row_stride, b in [0, batch].
struct RaggedTarget {
  int32_t* offsets = nullptr;
  int64_t row_stride = 0;  // elements between consecutive tokens
  int32_t from_k = 0;      // 0: from cu_seqlens_q, 1: from cu_seqlens_k
};

constexpr int kMaxRaggedTargets = 8;

struct VarlenPrepare {
  const int32_t* cu_seqlens_q = nullptr;  // [batch + 1]
  const int32_t* cu_seqlens_k = nullptr;  // [batch + 1]
  const int32_t* seqused_k = nullptr;     // [batch] or nullptr: keys per sequence when given
  int32_t batch = 0;
  int32_t* seq_len_q = nullptr;   // out [batch]
  int32_t* seq_len_kv = nullptr;  // out [batch]
  RaggedTarget targets[kMaxRaggedTargets];
  int32_t num_targets = 0;
};

cudaError_t varlen_prepare(const VarlenPrepare& p, cudaStream_t stream);

// lse between cuDNN's padded Stats [batch, heads, max_seqlen_q] and the ABI's varlen layout
// [heads, total_q] (row cu_seqlens_q[b] + i of head h), both float32 and compact. Rows past a
// sequence's length are neither read nor written on the packed side.
cudaError_t lse_padded_to_packed(const float* padded, float* packed, const int32_t* cu_seqlens_q, int32_t batch,
                                 int32_t heads, int32_t max_seqlen_q, int64_t total_q, cudaStream_t stream);
cudaError_t lse_packed_to_padded(const float* packed, float* padded, const int32_t* cu_seqlens_q, int32_t batch,
                                 int32_t heads, int32_t max_seqlen_q, int64_t total_q, cudaStream_t stream);

// A paged call's lengths for cuDNN's padding mask: seq_len_q[b] = seqlen_q, seq_len_kv[b] =
// seqused_k[b], b < batch.
cudaError_t paged_lengths(const int32_t* seqused_k, int32_t seqlen_q, int32_t batch, int32_t* seq_len_q,
                          int32_t* seq_len_kv, cudaStream_t stream);

// cuDNN's page table [batch, max_pages] (dense) from the ABI's block_table (row stride
// `table_stride`): entries of pages a sequence uses are copied, the others are 0, never read from
// block_table (the ABI lets them hold -1; cuDNN's cache load may fetch rows past seqused_k, and a
// page index of -1 would address memory before the cache).
cudaError_t paged_table(const int32_t* block_table, int64_t table_stride, const int32_t* seqused_k, int32_t page_size,
                        int32_t batch, int32_t max_pages, int32_t* table, cudaStream_t stream);

// A decode step's sequences with no cached key (seqused_k[b] == 0) get the ABI's empty row:
// out 0 and lse -inf (the sink logit with sinks), whatever cuDNN wrote there. out: 16-bit
// elements [batch, 1, heads, head_dim_v] with element strides; lse [batch, heads] or nullptr.
struct EmptyRows {
  const int32_t* seqused_k = nullptr;
  uint16_t* out = nullptr;
  int64_t out_batch_stride = 0, out_head_stride = 0;
  float* lse = nullptr;
  const float* sinks = nullptr;
  int32_t batch = 0, heads = 0, head_dim_v = 0;
};
cudaError_t paged_empty_rows(const EmptyRows& p, cudaStream_t stream);

}  // namespace attnrt::cuda::sdpa
