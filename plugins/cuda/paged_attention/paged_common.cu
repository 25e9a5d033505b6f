// paged_attention's kernels beside the attention itself: the split-KV combine (FlashDecoding's
// reduction by LSE) and the KV-cache append through a slot mapping (vLLM's reshape_and_cache).
#include "paged_attention.cuh"

namespace attnrt::cuda::paged {
namespace {

// The split-KV merge of one query row (sequence b, token i, query head h):
//   lse = log(sum_s exp(lse_s)),  out = sum_s exp(lse_s - lse) out_s
// kWarpsPerRow warps share a row: warp `part` of a row adds the splits s with s % kWarpsPerRow ==
// part, each lane 4 columns (float4: a split's row is one coalesced 512-byte read at head_dim 128),
// and the row's warps meet in shared memory. One warp a row (kWarps rows a block) where a row has
// few splits; all four on one row where it has many, so a warp's loads are one batch in flight
// rather than one batch of 8 after another: a 1 x 64k decode step is 64 rows of 32 splits, and a
// warp a row left them to 16 blocks, each waiting out four load latencies in turn. A row whose
// every split saw nothing (lse_s = -inf) gets out 0 and lse -inf.
// Four merged columns of a row, normalized by `inv`, stored as T at `dst`.
template <class T>
__device__ __forceinline__ void store_columns(T* dst, float4 x, float inv) {
  uint2 packed;
  packed.x = pack2<T>(x.x * inv, x.y * inv);
  packed.y = pack2<T>(x.z * inv, x.w * inv);
  *reinterpret_cast<uint2*>(dst) = packed;
}

template <class T, int kWarpsPerRow>
__global__ void __launch_bounds__(kThreads) combine_kernel(const __grid_constant__ PagedParams p) {
  static_assert(kWarpsPerRow == 1 || kWarpsPerRow == kWarps, "a row's warps are one block (its early return)");
  constexpr int kRowsPerBlock = kWarps / kWarpsPerRow;
  __shared__ float weights[kWarps][kMaxSplits];
  __shared__ float4 sums[kWarpsPerRow > 1 ? kWarps : 1][kMaxHeadDim / 4];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Launched as a programmatic dependent of the attention kernel on sm_90 (run_combine): it may
  // start while the splits finish, and waits here until their writes are visible. Without the
  // launch attribute this returns at once.
  cudaGridDependencySynchronize();
#endif
  const AttentionParams& a = p.attn;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int part = warp % kWarpsPerRow;
  const int64_t item = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + warp / kWarpsPerRow;  // (b, i, h), h fastest
  const int h = static_cast<int>(item % a.heads_q);
  const int64_t bi = item / a.heads_q;
  const int b = static_cast<int>(bi / a.seqlen_q), i = static_cast<int>(bi % a.seqlen_q);
  if (b >= a.batch) return;
  const Seq seq = paged_sequence(p, b);
  if (i >= seq.q_len) return;
  const int64_t all_rows = static_cast<int64_t>(a.heads_q) * a.total_q;
  const int hd = a.head_dim_v;
  const int64_t row = lse_index(a, seq, h, i);
  // Every warp of the row takes the max and the sum over all splits (a few loads, cached) and
  // keeps the weights of its own.
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
  for (int d = 4 * lane; d < hd; d += 128) {
    // No branch on a zero weight: every split writes every row it owns (0 where it saw
    // nothing), so the loads are independent and eight of them are in flight at once.
    float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
    for (int s = part; s < p.num_splits; s += kWarpsPerRow) {
      const float w = weights[warp][s];
      const float4 y = *reinterpret_cast<const float4*>(p.partial_out + (s * all_rows + row) * hd + d);
      x.x += w * y.x;
      x.y += w * y.y;
      x.z += w * y.z;
      x.w += w * y.w;
    }
    if constexpr (kWarpsPerRow > 1) {
      sums[warp][d / 4] = x;
    } else {
      store_columns(query_row<T>(a, a.out, b, i, h) + d, x, inv);
    }
  }
  if constexpr (kWarpsPerRow > 1) {
    __syncthreads();
    if (part != 0) return;
    for (int d = 4 * lane; d < hd; d += 128) {
      float4 x = sums[0][d / 4];
#pragma unroll
      for (int w = 1; w < kWarpsPerRow; ++w) {
        const float4 y = sums[w][d / 4];
        x.x += y.x;
        x.y += y.y;
        x.z += y.z;
        x.w += y.w;
      }
      store_columns(query_row<T>(a, a.out, b, i, h) + d, x, inv);
    }
  }
  if (a.lse != nullptr && part == 0 && lane == 0) a.lse[row] = sum > 0.f ? mx + logf(sum) : -INFINITY;
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

cudaError_t run_combine(const PagedParams& p, bool bf16, bool dependent_launch, cudaStream_t stream) {
  if (p.num_splits > kMaxSplits) return cudaErrorInvalidValue;
  // float4 columns, at most kMaxHeadDim (the plugin's head dims are)
  if (p.attn.head_dim_v % 4 != 0 || p.attn.head_dim_v > kMaxHeadDim) return cudaErrorInvalidValue;
  const int64_t rows = int64_t(p.attn.batch) * p.attn.seqlen_q * p.attn.heads_q;
  // A row's warps: more than 8 splits (one unrolled batch of loads) take a block a row.
  const bool wide = p.num_splits > 8;
  const int64_t rows_per_block = wide ? 1 : kWarps;
  // Programmatic dependent launch (sm_90): the combine is scheduled while the attention grid's
  // last blocks run, so its launch latency hides behind them (the 1 x 64k decode step, the one
  // that splits most, streamed 1% more in the H100 call that chose this).
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block));
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = dependent_launch ? 1 : 0;
  if (wide) {
    return bf16 ? cudaLaunchKernelEx(&config, combine_kernel<__nv_bfloat16, kWarps>, p)
                : cudaLaunchKernelEx(&config, combine_kernel<__half, kWarps>, p);
  }
  return bf16 ? cudaLaunchKernelEx(&config, combine_kernel<__nv_bfloat16, 1>, p)
              : cudaLaunchKernelEx(&config, combine_kernel<__half, 1>, p);
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
