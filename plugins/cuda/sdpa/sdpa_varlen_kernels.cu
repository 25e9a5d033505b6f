// The varlen helpers of the cuDNN sdpa plugin (sdpa_varlen_kernels.hpp).
#include "sdpa_varlen_kernels.hpp"

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

}  // namespace

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
