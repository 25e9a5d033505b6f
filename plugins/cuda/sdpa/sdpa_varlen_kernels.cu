// The varlen and paged helpers of the cuDNN sdpa plugin (sdpa_varlen_kernels.hpp).
#include "sdpa_varlen_kernels.hpp"

#include <cmath>

namespace attnrt::cuda::sdpa {
namespace {

__global__ void varlen_prepare_kernel(VarlenPrepare p) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b > p.batch) return;
  if (b < p.batch) {
    p.seq_len_q[b] = p.cu_seqlens_q[b + 1] - p.cu_seqlens_q[b];
    p.seq_len_kv[b] = p.seqused_k ? p.seqused_k[b] : p.cu_seqlens_k[b + 1] - p.cu_seqlens_k[b];
  }
  for (int t = 0; t < p.num_targets; ++t) {
    const RaggedTarget& r = p.targets[t];
    const int64_t row = r.from_k ? p.cu_seqlens_k[b] : p.cu_seqlens_q[b];
    r.offsets[b] = static_cast<int32_t>(row * r.row_stride);
  }
}

template <bool kToPacked>
__global__ void lse_copy_kernel(const float* src, float* dst, const int32_t* cu_seqlens_q, int32_t heads,
                                int32_t max_seqlen_q, int64_t total_q) {
  const int b = blockIdx.z, h = blockIdx.y;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int32_t start = cu_seqlens_q[b], len = cu_seqlens_q[b + 1] - start;
  if (i >= len || i >= max_seqlen_q) return;
  const int64_t padded = (int64_t(b) * heads + h) * max_seqlen_q + i;
  const int64_t packed = int64_t(h) * total_q + start + i;
  if (kToPacked) {
    dst[packed] = src[padded];
  } else {
    dst[padded] = src[packed];
  }
}

template <bool kToPacked>
cudaError_t lse_copy(const float* src, float* dst, const int32_t* cu_seqlens_q, int32_t batch, int32_t heads,
                     int32_t max_seqlen_q, int64_t total_q, cudaStream_t stream) {
  if (batch == 0 || heads == 0 || max_seqlen_q == 0) return cudaSuccess;
  const dim3 grid((max_seqlen_q + 127) / 128, heads, batch);
  lse_copy_kernel<kToPacked><<<grid, 128, 0, stream>>>(src, dst, cu_seqlens_q, heads, max_seqlen_q, total_q);
  return cudaGetLastError();
}

__global__ void paged_lengths_kernel(const int32_t* seqused_k, int32_t seqlen_q, int32_t batch, int32_t* seq_len_q,
                                     int32_t* seq_len_kv) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  seq_len_q[b] = seqlen_q;
  seq_len_kv[b] = seqused_k[b];
}

__global__ void paged_empty_rows_kernel(EmptyRows p) {
  const int b = blockIdx.x, h = blockIdx.y;
  if (p.seqused_k[b] != 0) return;
  uint16_t* o = p.out + b * p.out_batch_stride + h * p.out_head_stride;
  for (int c = threadIdx.x; c < p.head_dim_v; c += blockDim.x) o[c] = 0;
  if (p.lse && threadIdx.x == 0) p.lse[int64_t(b) * p.heads + h] = p.sinks ? p.sinks[h] : -INFINITY;
}

__global__ void paged_table_kernel(const int32_t* block_table, int64_t table_stride, const int32_t* seqused_k,
                                   int32_t page_size, int32_t max_pages, int32_t* table) {
  const int b = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= max_pages) return;
  const int32_t used = (seqused_k[b] + page_size - 1) / page_size;
  table[int64_t(b) * max_pages + j] = j < used ? block_table[b * table_stride + j] : 0;
}

}  // namespace

cudaError_t paged_table(const int32_t* block_table, int64_t table_stride, const int32_t* seqused_k, int32_t page_size,
                        int32_t batch, int32_t max_pages, int32_t* table, cudaStream_t stream) {
  if (batch == 0 || max_pages == 0) return cudaSuccess;
  paged_table_kernel<<<dim3((max_pages + 127) / 128, batch), 128, 0, stream>>>(block_table, table_stride, seqused_k,
                                                                               page_size, max_pages, table);
  return cudaGetLastError();
}

cudaError_t paged_empty_rows(const EmptyRows& p, cudaStream_t stream) {
  if (p.batch == 0 || p.heads == 0) return cudaSuccess;
  paged_empty_rows_kernel<<<dim3(p.batch, p.heads), 64, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t paged_lengths(const int32_t* seqused_k, int32_t seqlen_q, int32_t batch, int32_t* seq_len_q,
                          int32_t* seq_len_kv, cudaStream_t stream) {
  if (batch == 0) return cudaSuccess;
  paged_lengths_kernel<<<(batch + 127) / 128, 128, 0, stream>>>(seqused_k, seqlen_q, batch, seq_len_q, seq_len_kv);
  return cudaGetLastError();
}

cudaError_t varlen_prepare(const VarlenPrepare& p, cudaStream_t stream) {
  const int threads = 128, blocks = (p.batch + 1 + threads - 1) / threads;
  varlen_prepare_kernel<<<blocks, threads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t lse_padded_to_packed(const float* padded, float* packed, const int32_t* cu_seqlens_q, int32_t batch,
                                 int32_t heads, int32_t max_seqlen_q, int64_t total_q, cudaStream_t stream) {
  return lse_copy<true>(padded, packed, cu_seqlens_q, batch, heads, max_seqlen_q, total_q, stream);
}

cudaError_t lse_packed_to_padded(const float* packed, float* padded, const int32_t* cu_seqlens_q, int32_t batch,
                                 int32_t heads, int32_t max_seqlen_q, int64_t total_q, cudaStream_t stream) {
  return lse_copy<false>(packed, padded, cu_seqlens_q, batch, heads, max_seqlen_q, total_q, stream);
}

}  // namespace attnrt::cuda::sdpa
