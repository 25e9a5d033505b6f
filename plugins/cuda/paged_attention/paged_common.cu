// paged_attention's kernels beside the attention itself: the split-KV combine (FlashDecoding's
// reduction by LSE) and the KV-cache append through a slot mapping (vLLM's reshape_and_cache).
#include "paged_attention.cuh"

namespace attnrt::cuda::paged {
namespace {

constexpr int kMaxSplits = 128;  // the plugin never asks for more (paged_plugin.cpp)

// One block per token slot (b, i): each warp merges one query head's splits at a time.
//   lse = log(sum_s exp(lse_s)),  out = sum_s exp(lse_s - lse) out_s
// A row whose every split saw nothing (lse_s = -inf) gets out 0 and lse -inf.
template <class T>
__global__ void __launch_bounds__(kThreads) combine_kernel(const __grid_constant__ PagedParams p) {
  __shared__ float weights[kThreads / 32][kMaxSplits];
  const AttentionParams& a = p.attn;
  const int b = static_cast<int>(blockIdx.x) / a.seqlen_q, i = static_cast<int>(blockIdx.x) % a.seqlen_q;
  const Seq seq = paged_sequence(p, b);
  if (i >= seq.q_len) return;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t all_rows = static_cast<int64_t>(a.heads_q) * a.total_q;
  const int hd = a.head_dim_v;
  for (int h = warp; h < a.heads_q; h += kThreads / 32) {
    const int64_t row = lse_index(a, seq, h, i);
    float mx = -INFINITY;
    for (int s = lane; s < p.num_splits; s += 32) mx = fmaxf(mx, p.partial_lse[s * all_rows + row]);
    mx = warp_max(mx);
    float sum = 0.f;
    for (int s = lane; s < p.num_splits; s += 32) {
      const float w = mx == -INFINITY ? 0.f : expf(p.partial_lse[s * all_rows + row] - mx);
      weights[warp][s] = w;
      sum += w;
    }
    sum = warp_sum(sum);
    __syncwarp();
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    T* o = query_row<T>(a, a.out, b, i, h);
    for (int d = lane; d < hd; d += 32) {
      float x = 0.f;
      for (int s = 0; s < p.num_splits; ++s) {
        const float w = weights[warp][s];
        if (w != 0.f) x += w * p.partial_out[(s * all_rows + row) * hd + d];
      }
      o[d] = from_float<T>(x * inv);
    }
    if (a.lse != nullptr && lane == 0) a.lse[row] = sum > 0.f ? mx + logf(sum) : -INFINITY;
    __syncwarp();
  }
}

// One block per new token: thread x copies elements of every head of k and v.
template <class T>
__global__ void append_kernel(const __grid_constant__ AppendParams p) {
  const int64_t n = blockIdx.x;
  const int64_t slot = p.slot_mapping[n];
  if (slot < 0) return;  // a padding token
  const int64_t page = slot / p.page_size, row = slot % p.page_size;
  const T* k_src = static_cast<const T*>(p.k_new) + n * p.k_new_row_stride;
  const T* v_src = static_cast<const T*>(p.v_new) + n * p.v_new_row_stride;
  T* k_dst = static_cast<T*>(p.k_cache.data) + page * p.k_cache.page_stride + row * p.k_cache.row_stride;
  T* v_dst = static_cast<T*>(p.v_cache.data) + page * p.v_cache.page_stride + row * p.v_cache.row_stride;
  for (int h = 0; h < p.heads_kv; ++h) {
    for (int d = static_cast<int>(threadIdx.x); d < p.head_dim; d += static_cast<int>(blockDim.x)) {
      k_dst[h * p.k_cache.head_stride + d] = k_src[h * p.k_new_head_stride + d];
    }
    for (int d = static_cast<int>(threadIdx.x); d < p.head_dim_v; d += static_cast<int>(blockDim.x)) {
      v_dst[h * p.v_cache.head_stride + d] = v_src[h * p.v_new_head_stride + d];
    }
  }
}

}  // namespace

cudaError_t run_combine(const PagedParams& p, bool bf16, cudaStream_t stream) {
  if (p.num_splits > kMaxSplits) return cudaErrorInvalidValue;
  const unsigned blocks = static_cast<unsigned>(p.attn.batch) * static_cast<unsigned>(p.attn.seqlen_q);
  if (bf16) {
    combine_kernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(p);
  } else {
    combine_kernel<__half><<<blocks, kThreads, 0, stream>>>(p);
  }
  return cudaGetLastError();
}

cudaError_t run_append(const AppendParams& p, bool bf16, cudaStream_t stream) {
  if (p.num_tokens == 0) return cudaSuccess;
  const unsigned threads = p.head_dim >= 128 || p.head_dim_v >= 128 ? 128u : 64u;
  if (bf16) {
    append_kernel<__nv_bfloat16><<<static_cast<unsigned>(p.num_tokens), threads, 0, stream>>>(p);
  } else {
    append_kernel<__half><<<static_cast<unsigned>(p.num_tokens), threads, 0, stream>>>(p);
  }
  return cudaGetLastError();
}

}  // namespace attnrt::cuda::paged
