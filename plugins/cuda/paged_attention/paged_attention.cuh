// The paged_attention kernel: decode (seqlen_q 1), multi-token decode and chunked prefill over a
// paged KV cache (vLLM's PagedAttention layout, paged_params.hpp), with split-KV (FlashDecoding).
//
// One thread block owns (sequence b, KV head, a block of kRows query rows, split s). Its rows are
// the (token, query head) pairs of the KV head's GQA group, token-major: row r of the sequence is
// token r / group, query head kv_head * group + r % group. So a decode step of GQA 8 is one
// block of 8 rows and every KV page is read once for all the query heads that share it
// (FlashInfer's and FlashAttention's "pack GQA"). The block walks the key tiles its rows see
// (the policy's key_blocks: causal / sliding window) within its split's share of the sequence:
//   - K and V tiles of kKeys tokens are gathered from their pages by cp.async, token by token
//     through block_table, double-buffered; tokens at or past seqused_k are zero-filled, never
//     read, so block_table entries past the used pages are never touched (-1 padding is safe);
//   - scores on CUDA cores in fp32 (decode reads each key once: it is bound by the cache's bytes,
//     not by FLOPs): warp w owns rows w, w + 4, w + 8 and w + 12 (interleaved, so a decode step
//     of GQA 4 keeps all four warps busy), each lane one key of the tile;
//   - the score map, mask and softmax start/end are the policy's (StandardScores / SinkScores:
//     softcap, bottom-right causal, sliding window, sinks), the same rules as flash_attention_2's;
//   - online softmax in the log2 domain (FlashAttention-2), P through shared memory, P V with
//     each thread owning output columns.
// A sink joins split 0's softmax only, so the LSE merge of the splits counts it once.
#pragma once

#include "paged_launch.hpp"

#include <attnrt_cuda/score_policy.cuh>
#include <attnrt_cuda/tile.cuh>
#include <attnrt_cuda/warp_mma.cuh>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace attnrt::cuda::paged {

template <class T>
__device__ __forceinline__ float to_float(T x);
template <>
__device__ __forceinline__ float to_float<__half>(__half x) {
  return __half2float(x);
}
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Eight elements of a 16-byte chunk as floats.
template <class T>
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 x = unpack2<T>(w[i]);
    f[2 * i] = x.x;
    f[2 * i + 1] = x.y;
  }
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// One sequence of a paged call: queries from cu_seqlens_q (varlen) or seqlen_q, keys from
// seqused_k (the cache has no cu_seqlens_k).
__device__ __forceinline__ Seq paged_sequence(const PagedParams& p, int b) {
  const AttentionParams& a = p.attn;
  Seq s;
  if (a.cu_seqlens_q) {
    const int32_t q0 = a.cu_seqlens_q[b];
    s.q_len = a.cu_seqlens_q[b + 1] - q0;
    s.lse_row0 = q0;
  } else {
    s.q_len = a.seqlen_q;
    s.lse_row0 = static_cast<int64_t>(b) * a.heads_q * a.seqlen_q;
  }
  s.k_len = a.seqused_k[b];
  s.diag = s.k_len - s.q_len;
  return s;
}

// Element pointer of (sequence b, token i, head h) in a query-side tensor (q, out).
template <class T>
__device__ __forceinline__ T* query_row(const AttentionParams& a, const TensorRef& t, int b, int i, int h) {
  const int64_t row = a.cu_seqlens_q ? static_cast<int64_t>(a.cu_seqlens_q[b] + i) * t.row_stride
                                     : b * t.batch_stride + static_cast<int64_t>(i) * t.row_stride;
  return static_cast<T*>(t.data) + row + static_cast<int64_t>(h) * t.head_stride;
}

// Key tiles [lo, hi) of split s of a sequence of k_len keys: the tiles cut into `splits`
// contiguous shares per sequence, so short sequences of a batch are not split into nothing.
__device__ __forceinline__ BlockRange split_tiles(int k_len, int splits, int s) {
  const int tiles = ceil_div(k_len, kKeys);
  const int per = ceil_div(tiles, splits);
  return {min(tiles, s * per), min(tiles, (s + 1) * per)};
}

template <int HD>
constexpr size_t smem_bytes() {
  return sizeof(float) * (kRows * HD + kRows * kKeys + 3 * kRows) + 2 * 2 * kKeys * (HD + 8) * sizeof(uint16_t);
}

template <class T, class Policy, int HD>
__global__ void __launch_bounds__(kThreads) paged_attention_kernel(const __grid_constant__ PagedParams p) {
  static_assert(HD % 32 == 0 && kThreads == 128 && kRows == 16 && kKeys == 32, "the thread mapping below");
  constexpr int kStride = HD + 8;  // padded smem row of K and V (bank-conflict free)
  constexpr int kWarps = kThreads / 32;
  constexpr int kRowsPerWarp = kRows / kWarps;  // score rows per warp: w, w + 4, w + 8, w + 12
  constexpr int kChunks = HD / 8;               // 16-byte chunks per row
  constexpr int kColThreads = HD < kThreads ? HD : kThreads;
  constexpr int kRowGroups = kThreads / kColThreads;  // P V: threads that share a column
  constexpr int kAccRows = kRows / kRowGroups;
  constexpr int kAccCols = HD / kColThreads;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* q_s = reinterpret_cast<float*>(smem_raw);  // [kRows][HD]
  float* p_s = q_s + kRows * HD;                    // [kRows][kKeys]
  float* alpha_s = p_s + kRows * kKeys;             // [kRows]
  float* max_s = alpha_s + kRows;                   // [kRows]
  float* sum_s = max_s + kRows;                     // [kRows]
  T* k_s = reinterpret_cast<T*>(sum_s + kRows);     // [2][kKeys][kStride]
  T* v_s = k_s + 2 * kKeys * kStride;               // [2][kKeys][kStride]

  const AttentionParams& a = p.attn;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int b = static_cast<int>(blockIdx.x) / a.heads_kv, kv_head = static_cast<int>(blockIdx.x) % a.heads_kv;
  const int split = static_cast<int>(blockIdx.z);
  const Seq seq = paged_sequence(p, b);
  const int group = p.group;
  const int r0 = static_cast<int>(blockIdx.y) * kRows;
  if (r0 >= seq.q_len * group) return;  // a shorter sequence of a varlen batch
  const int rows = min(kRows, seq.q_len * group - r0);
  const int i_first = r0 / group, i_last = (r0 + rows - 1) / group;
  const Policy policy(a, seq);
  const BlockRange seen = policy.key_blocks(i_first, i_last - i_first + 1, kKeys);
  const BlockRange share = split_tiles(seq.k_len, p.num_splits, split);
  const int t_lo = max(seen.lo, share.lo), t_hi = min(seen.hi, share.hi);

  // Q rows as floats (rows past `rows` zero).
  for (int c = tid; c < kRows * kChunks; c += kThreads) {
    const int r = c / kChunks, d = (c % kChunks) * 8;
    float f[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (r < rows) {
      const int rr = r0 + r;
      const T* src = query_row<T>(a, a.q, b, rr / group, kv_head * group + rr % group) + d;
      unpack8<T>(*reinterpret_cast<const uint4*>(src), f);
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) q_s[r * HD + d + e] = f[e];
  }

  const T* k_head = static_cast<const T*>(p.k.data) + static_cast<int64_t>(kv_head) * p.k.head_stride;
  const T* v_head = static_cast<const T*>(p.v.data) + static_cast<int64_t>(kv_head) * p.v.head_stride;
  const int32_t* table = p.block_table + static_cast<int64_t>(b) * p.table_stride;
  // Gathers key tile `tile` into buffer `buf`, token by token through the block table.
  auto load_kv = [&](int tile, int buf) {
    for (int c = tid; c < kKeys * kChunks; c += kThreads) {
      const int n = c / kChunks, d = (c % kChunks) * 8;
      const int j = tile * kKeys + n;
      const bool valid = j < seq.k_len;
      const T* ks = k_head;
      const T* vs = v_head;
      if (valid) {
        const int64_t page = table[j / p.page_size], slot = j % p.page_size;
        ks = k_head + page * p.k.page_stride + slot * p.k.row_stride + d;
        vs = v_head + page * p.v.page_stride + slot * p.v.row_stride + d;
      }
      cp_async_16(k_s + (buf * kKeys + n) * kStride + d, ks, valid);
      cp_async_16(v_s + (buf * kKeys + n) * kStride + d, vs, valid);
    }
  };

  // Softmax state of this warp's score rows (log2 domain, c = 1), the same on every lane.
  float m_run[kRowsPerWarp], l_run[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int rr = r0 + r * kWarps + warp;
    const RowStart st = split == 0 ? policy.row_start(kv_head * group + rr % group, 1.f) : RowStart{-INFINITY, 0.f};
    m_run[r] = st.max;
    l_run[r] = st.sum;
  }
  const int col0 = tid % kColThreads, row_group = tid / kColThreads;
  float acc[kAccRows][kAccCols];
#pragma unroll
  for (int r = 0; r < kAccRows; ++r) {
#pragma unroll
    for (int c = 0; c < kAccCols; ++c) acc[r][c] = 0.f;
  }

  if (t_lo < t_hi) load_kv(t_lo, 0);
  cp_async_commit();
  for (int t = t_lo; t < t_hi; ++t) {
    const int buf = (t - t_lo) & 1;
    if (t + 1 < t_hi) load_kv(t + 1, buf ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();

    // S = Q K^T for this warp's rows and key `lane`; mask, score map, online softmax.
    if (warp < rows) {
      const int active = (rows - warp + kWarps - 1) / kWarps;  // this warp's rows in use (uniform)
      float s[kRowsPerWarp] = {0.f, 0.f, 0.f, 0.f};
      const T* krow = k_s + (buf * kKeys + lane) * kStride;
#pragma unroll 4
      for (int d = 0; d < HD; d += 8) {
        float kf[8];
        unpack8<T>(*reinterpret_cast<const uint4*>(krow + d), kf);
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
          if (r >= active) break;
          const float4* qr = reinterpret_cast<const float4*>(q_s + (r * kWarps + warp) * HD + d);
          const float4 x = qr[0], y = qr[1];
          s[r] += x.x * kf[0] + x.y * kf[1] + x.z * kf[2] + x.w * kf[3] + y.x * kf[4] + y.y * kf[5] + y.z * kf[6] +
                  y.w * kf[7];
        }
      }
      const int j = t * kKeys + lane;
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const int m = r * kWarps + warp;
        const int rr = r0 + m, i = rr / group, h = kv_head * group + rr % group;
        float x = -INFINITY;
        if (m < rows && policy.row_mask(h, i).has(j)) {
          policy.with_scores(h, [&](auto scores) { x = scores.log2(s[r], i, j); });
        }
        const float m_new = fmaxf(m_run[r], warp_max(x));
        const float pe = m_new == -INFINITY ? 0.f : exp2f(x - m_new);
        const float alpha = m_new == -INFINITY ? 1.f : exp2f(m_run[r] - m_new);
        l_run[r] = l_run[r] * alpha + warp_sum(pe);
        m_run[r] = m_new;
        p_s[m * kKeys + lane] = pe;
        if (lane == 0) alpha_s[m] = alpha;
      }
    }
    __syncthreads();

    // O = alpha O + P V for the columns this thread owns.
#pragma unroll
    for (int r = 0; r < kAccRows; ++r) {
      const int m = row_group * kAccRows + r;
      if (m < rows) {
        const float alpha = alpha_s[m];
#pragma unroll
        for (int c = 0; c < kAccCols; ++c) acc[r][c] *= alpha;
      }
    }
    const T* vt = v_s + buf * kKeys * kStride + col0;
#pragma unroll 2
    for (int n = 0; n < kKeys; n += 4) {
      float vf[4][kAccCols];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
#pragma unroll
        for (int c = 0; c < kAccCols; ++c) vf[q][c] = to_float<T>(vt[(n + q) * kStride + c * kColThreads]);
      }
#pragma unroll
      for (int r = 0; r < kAccRows; ++r) {
        const int m = row_group * kAccRows + r;
        if (m < rows) {
          const float4 pr = *reinterpret_cast<const float4*>(p_s + m * kKeys + n);
#pragma unroll
          for (int c = 0; c < kAccCols; ++c) {
            acc[r][c] += pr.x * vf[0][c] + pr.y * vf[1][c] + pr.z * vf[2][c] + pr.w * vf[3][c];
          }
        }
      }
    }
    __syncthreads();
  }
  cp_async_wait<0>();

  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      max_s[r * kWarps + warp] = m_run[r];
      sum_s[r * kWarps + warp] = l_run[r];
    }
  }
  __syncthreads();

  const int64_t all_rows = static_cast<int64_t>(a.heads_q) * a.total_q;
#pragma unroll
  for (int r = 0; r < kAccRows; ++r) {
    const int m = row_group * kAccRows + r;
    if (m >= rows) continue;
    const int rr = r0 + m, i = rr / group, h = kv_head * group + rr % group;
    const RowEnd end = policy.row_end(max_s[m], sum_s[m], 1.f);
    const float inv = end.inv();
    const int64_t lse_row = lse_index(a, seq, h, i);
    if (p.num_splits == 1) {
      T* o = query_row<T>(a, a.out, b, i, h);
#pragma unroll
      for (int c = 0; c < kAccCols; ++c) o[col0 + c * kColThreads] = from_float<T>(acc[r][c] * inv);
      if (a.lse != nullptr && col0 == 0) a.lse[lse_row] = end.lse();
    } else {
      float* o = p.partial_out + (split * all_rows + lse_row) * HD;
#pragma unroll
      for (int c = 0; c < kAccCols; ++c) o[col0 + c * kColThreads] = acc[r][c] * inv;
      if (col0 == 0) p.partial_lse[split * all_rows + lse_row] = end.lse();
    }
  }
}

template <class Policy, int HD>
cudaError_t run_attention(const PagedParams& p, bool bf16, cudaStream_t stream) {
  auto kernel = bf16 ? paged_attention_kernel<__nv_bfloat16, Policy, HD> : paged_attention_kernel<__half, Policy, HD>;
  constexpr size_t smem = smem_bytes<HD>();
  if (smem > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (e != cudaSuccess) return e;
  }
  const dim3 grid(static_cast<unsigned>(p.attn.batch * p.attn.heads_kv), static_cast<unsigned>(p.row_blocks),
                  static_cast<unsigned>(p.num_splits));
  kernel<<<grid, kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

template <class Policy, int HD>
int blocks_per_sm(bool bf16) {
  auto kernel = bf16 ? paged_attention_kernel<__nv_bfloat16, Policy, HD> : paged_attention_kernel<__half, Policy, HD>;
  constexpr size_t smem = smem_bytes<HD>();
  if (smem > 48 * 1024 &&
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)) != cudaSuccess) {
    return 1;
  }
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kThreads, smem) != cudaSuccess) return 1;
  return blocks > 0 ? blocks : 1;
}

}  // namespace attnrt::cuda::paged

#define ATTNRT_PAGED_INSTANTIATE(Policy, HD)                                                                         \
  template cudaError_t attnrt::cuda::paged::run_attention<Policy, HD>(const attnrt::cuda::paged::PagedParams&, bool, \
                                                                      cudaStream_t);                                 \
  template int attnrt::cuda::paged::blocks_per_sm<Policy, HD>(bool);
