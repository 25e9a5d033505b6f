// The paged_attention kernel: decode (seqlen_q 1), multi-token decode and chunked prefill over a
// paged KV cache (vLLM's PagedAttention layout, paged_params.hpp), with split-KV (FlashDecoding).
//
// One thread block owns (sequence b, KV head, a block of kRows query rows, split s). Its rows are
// the (token, query head) pairs of the KV head's GQA group, token-major: row r of the sequence is
// token r / group, query head kv_head * group + r % group. So a decode step of GQA 8 is one
// block of 8 rows and every KV page is read once for all the query heads that share it
// (FlashInfer's and FlashAttention's "pack GQA"). The block walks the key tiles its rows see
// (the policy's key_blocks: causal / sliding window) within its split's share of the sequence:
//   - K and V tiles of kKeys tokens are gathered from their pages by cp.async (with L2's
//     256-byte prefetch) through block_table into a ring of kStages buffers; each thread copies
//     16-byte chunks of fixed columns down the tile's rows, and reads the block-table entries of
//     the next tile to copy while tile t is computed, so the page lookup (a dependent global
//     load) never stalls the copies; tokens at or past seqused_k are zero-filled, never read, so
//     block_table entries past the used pages are never touched (-1 padding is safe);
//   - the products on tensor cores (mma.sync m16n8k16, fp32 accumulators): decode reads each key
//     once and is bound by the cache's bytes, but on CUDA cores a GQA-8 step costs 4 FMAs per
//     byte read (S and P V for 8 query heads), close to the SMs' issue limit at HBM speed; as an
//     m16 tile the whole group costs 2 x 16 products per 16 keys and warp. Each warp takes
//     kWarpKeys keys of every tile with its own online softmax (log2 domain, FlashAttention-2's
//     rescaling), its rows' state and O in registers, like flash_attention_2's forward warps;
//   - the score map, mask and softmax start/end are the policy's (StandardScores / SinkScores:
//     softcap, bottom-right causal, sliding window, sinks), the same rules as flash_attention_2's;
//   - at the end the warps' (max, sum, O) are merged through shared memory by their maxima (the
//     split-KV merge inside the block), and the block writes out and LSE, or its split's
//     normalized partial output and LSE for the combine kernel.
// A sink joins split 0's warp 0 only, so the merges count it once.
//
// kGroups: a block of two groups of kWarps warps (head_dim up to 128) is two such pipelines, each
// with its own ring and its own half of the split's keys, synchronized by named barriers, merged
// with the warps' states at the end: two key streams of one (sequence, KV head) per block without
// a partial output for each. 16 x 8k decode (128 (sequence, KV head) pairs on 132 SMs) needs two
// streams a pair to fill the SMs; as two splits, the second stream's partial rows and the combine
// kernel after the grid cost what the block's own merge does not.
#pragma once

#include "paged_launch.hpp"

#include <attnrt_cuda/score_policy.cuh>
#include <attnrt_cuda/tile.cuh>
#include <attnrt_cuda/warp_gemm.cuh>
#include <attnrt_cuda/warp_mma.cuh>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace attnrt::cuda::paged {

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

// Shared-memory layout and load geometry of the kernel for one head_dim.
template <int HD, int kGroups = 1>
struct Geometry {
  static_assert(HD % 16 == 0, "k16 steps of Q K^T");
  static constexpr int kStride = HD + 8;  // padded row of Q (tile.cuh): conflict-free ldmatrix
  // K and V rows are unpadded and swizzled (warp_gemm.cuh's SwizzledRows): with rows padded to
  // HD + 8 the copies' shared-memory rows were not 128-byte aligned, and the profiler counted
  // 33% more L2 sectors than the bytes read (L2 at 86% of its throughput, DRAM at 82%).
  using KVRows = SwizzledRows<HD>;
  static constexpr int kChunks = HD / 8;                   // 16-byte chunks per row
  static constexpr int kRowsPerPass = kThreads / kChunks;  // tile rows one pass of the block copies
  static constexpr int kPasses = kKeys / kRowsPerPass;     // passes per tile (per K and per V)
  static_assert(kThreads % kChunks == 0 && kKeys % kRowsPerPass == 0, "whole passes");
  static constexpr int kOStride = HD + 4;  // floats per row of a warp's O in the merge
  // Q's fragments stay in registers up to head_dim 128 (32 registers); at 256 beside O's 128
  // they would spill, so Q is read from shared memory per tile there (flash_attention_2's rule).
  static constexpr bool kQInRegs = HD <= 128;
  static constexpr size_t kQBytes = size_t(kRows) * kStride * 2;
  static constexpr size_t kKVBytes = size_t(2) * kStages * kKeys * HD * 2;  // one group's ring
  static constexpr size_t kMergeBytes = sizeof(float) * kGroups * kWarps * kRows * (kOStride + 2);
  static_assert(kMergeBytes <= kGroups * kKVBytes, "the merge reuses the K/V buffers");
  static constexpr size_t kSmem = kQBytes + kGroups * kKVBytes;
};

template <int HD, int kGroups = 1>
constexpr size_t smem_bytes() {
  return Geometry<HD, kGroups>::kSmem;
}

// Whether two groups' rings fit one block's shared memory (227 KB on sm_90, 163 KB on sm_80; the
// kernel is only launched with two where the device's opt-in limit holds it, run_attention).
template <int HD>
constexpr bool kTwoGroups = smem_bytes<HD, 2>() <= 227 * 1024;

// The barrier of group `g` of kGroups (the whole block when there is one): bar.sync with ids 1
// and 2, as CUTLASS's NamedBarrier, so each group's ring advances on its own.
template <int kGroups>
__device__ __forceinline__ void group_sync(int g) {
  if constexpr (kGroups == 1) {
    __syncthreads();
  } else {
    // Immediate ids (a register id would make the compiler reserve all 16 barriers).
    if (g == 0) {
      asm volatile("bar.sync 1, %0;" ::"n"(kThreads) : "memory");
    } else {
      asm volatile("bar.sync 2, %0;" ::"n"(kThreads) : "memory");
    }
  }
}

template <class T, class Policy, int HD, int kGroups>
__global__ void __launch_bounds__(kThreads* kGroups) paged_attention_kernel(const __grid_constant__ PagedParams p) {
  using G = Geometry<HD, kGroups>;
  constexpr int S = G::kStride;
  constexpr int kBlockThreads = kThreads * kGroups, kBlockWarps = kWarps * kGroups;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  // This thread's group (its ring, its half of the split's keys), its index and warp in the group.
  const int part = tid / kThreads, gtid = tid % kThreads, gwarp = warp % kWarps;
  T* sQ = reinterpret_cast<T*>(smem_raw);         // [kRows][S]
  T* sKV = sQ + kRows * S;                        // the groups' rings, then the merge's floats
  T* sK = sKV + part * 2 * kStages * kKeys * HD;  // [kStages][kKeys][HD], rows swizzled (G::KVRows)
  T* sV = sK + kStages * kKeys * HD;              // [kStages][kKeys][HD], rows swizzled

  const AttentionParams& a = p.attn;
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
  const BlockRange share = split_tiles(seq.k_len, p.num_splits * kGroups, split * kGroups + part);
  const int t_lo = max(seen.lo, share.lo), t_hi = min(seen.hi, share.hi);

  // Q rows (rows past `rows` zero-filled), by the whole block: one cp.async group of its own.
#pragma unroll
  for (int c = tid; c < kRows * G::kChunks; c += kBlockThreads) {
    const int r = c / G::kChunks, col = (c % G::kChunks) * 8;
    const bool valid = r < rows;
    const T* src = static_cast<const T*>(a.q.data);
    if (valid) src = query_row<T>(a, a.q, b, (r0 + r) / group, kv_head * group + (r0 + r) % group) + col;
    cp_async_16(sQ + r * S + col, src, valid);
  }
  cp_async_commit();

  // The group's threads copy K and V: 16-byte chunks of fixed columns down the tile's rows.
  const int ld_row = gtid / G::kChunks, ld_col = (gtid % G::kChunks) * 8;

  const T* k_head = static_cast<const T*>(p.k.data) + static_cast<int64_t>(kv_head) * p.k.head_stride + ld_col;
  const T* v_head = static_cast<const T*>(p.v.data) + static_cast<int64_t>(kv_head) * p.v.head_stride + ld_col;
  const int32_t* table = p.block_table + static_cast<int64_t>(b) * p.table_stride;
  const bool pow2 = p.page_shift >= 0;
  // The pages of this thread's rows of tile `tile` (0 past the sequence: never read).
  auto fetch_pages = [&](int tile, int32_t(&pages)[G::kPasses]) {
#pragma unroll
    for (int ps = 0; ps < G::kPasses; ++ps) {
      const int j = tile * kKeys + ld_row + ps * G::kRowsPerPass;
      pages[ps] = j < seq.k_len ? __ldg(table + (pow2 ? j >> p.page_shift : j / p.page_size)) : 0;
    }
  };
  // Copies K and V of tile `tile` into buffer `buf` from the pages fetch_pages read.
  auto load_kv = [&](int tile, int buf, const int32_t(&pages)[G::kPasses]) {
    T* dk = sK + buf * kKeys * HD;
    T* dv = sV + buf * kKeys * HD;
#pragma unroll
    for (int ps = 0; ps < G::kPasses; ++ps) {
      const int row = ld_row + ps * G::kRowsPerPass, j = tile * kKeys + row;
      const bool valid = j < seq.k_len;
      const int64_t slot = pow2 ? j & (p.page_size - 1) : j % p.page_size;
      const T* ks = k_head;
      const T* vs = v_head;
      if (valid) {
        ks += pages[ps] * p.k.page_stride + slot * p.k.row_stride;
        vs += pages[ps] * p.v.page_stride + slot * p.v.row_stride;
      }
      cp_async_16_prefetch_256(dk + G::KVRows::offset(row, ld_col), ks, valid);
      cp_async_16_prefetch_256(dv + G::KVRows::offset(row, ld_col), vs, valid);
    }
  };

  // The ring's first kStages - 1 tiles, one cp.async group each (empty past t_hi), and the
  // pages of the tile after them.
  int32_t pages[G::kPasses];
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (t_lo + st < t_hi) {
      fetch_pages(t_lo + st, pages);
      load_kv(t_lo + st, st, pages);
    }
    cp_async_commit();
  }
  if (t_lo + kStages - 1 < t_hi) fetch_pages(t_lo + kStages - 1, pages);

  cp_async_wait<kStages - 1>();  // Q has landed (the whole block's copies: one block barrier)
  __syncthreads();
  uint32_t qf[G::kQInRegs ? HD / 16 : 1][4];
  if constexpr (G::kQInRegs) {
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) ldmatrix_x4(qf[kk], sQ + (lane % 16) * S + kk * 16 + (lane / 16) * 8);
  }

  // This thread's two accumulator rows (g and g + 8): their token, query head, visible keys and
  // softmax state. Scores stay raw (max taken on q.k, the scale folded into the exponent) when
  // the policy's map is linear with a positive scale, else they are mapped to log2 logits.
  const bool fold = policy.linear();
  const float c = fold ? a.softmax_scale * kLog2e : 1.f;
  int row_i[2], row_h[2];
  Span row_keys[2];
  float row_max[2], row_sum[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int m = g + 8 * r, rr = r0 + m;
    row_i[r] = rr / group;
    row_h[r] = kv_head * group + rr % group;
    row_keys[r] = m < rows ? policy.row_mask(row_h[r], row_i[r]) : Span{0, 0};
    const RowStart st = split == 0 && warp == 0 && m < rows ? policy.row_start(row_h[r], c) : RowStart{-INFINITY, 0.f};
    row_max[r] = st.max;
    row_sum[r] = t == 0 ? st.sum : 0.f;  // a row's sum is split over its quad's four lanes
  }
  float o[1][HD / 8][4];
#pragma unroll
  for (int dt = 0; dt < HD / 8; ++dt) o[0][dt][0] = o[0][dt][1] = o[0][dt][2] = o[0][dt][3] = 0.f;

  for (int tile = t_lo; tile < t_hi; ++tile) {
    const int buf = (tile - t_lo) % kStages, ahead = tile + kStages - 1;
    if (ahead < t_hi) load_kv(ahead, (ahead - t_lo) % kStages, pages);
    cp_async_commit();
    if (ahead + 1 < t_hi) fetch_pages(ahead + 1, pages);  // in flight while this tile is computed
    cp_async_wait<kStages - 1>();                         // tile `tile` has landed
    group_sync<kGroups>(part);

    const int n0 = tile * kKeys + gwarp * kWarpKeys;            // this warp's first key
    const T* wK = sK + (buf * kKeys + gwarp * kWarpKeys) * HD;  // (its rows' swizzle: row % 8 unchanged)
    const T* wV = sV + (buf * kKeys + gwarp * kWarpKeys) * HD;
    float s[1][kWarpKeys / 8][4];
#pragma unroll
    for (int nt = 0; nt < kWarpKeys / 8; ++nt) s[0][nt][0] = s[0][nt][1] = s[0][nt][2] = s[0][nt][3] = 0.f;
    if constexpr (G::kQInRegs) {
      auto q_frags = [&](int kk, uint32_t(&f)[1][4]) {
#pragma unroll
        for (int e = 0; e < 4; ++e) f[0][e] = qf[kk][e];
      };
      gemm_xs<T, 1, HD, kWarpKeys, Layout::kRowMajor, HD, decltype(q_frags), NoStep, typename G::KVRows>(s, q_frags, wK,
                                                                                                         lane);
    } else {
      const SmemA<T, 1, Layout::kRowMajor, S> q_frags{sQ, lane};
      gemm_xs<T, 1, HD, kWarpKeys, Layout::kRowMajor, HD, decltype(q_frags), NoStep, typename G::KVRows>(s, q_frags, wK,
                                                                                                         lane);
    }

    // Score map (unless folded), then each element's mask: the sequence end, causal / window,
    // and rows past `rows` (empty spans); masked scores are -inf in either domain.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (!fold) {
        policy.with_scores(row_h[r], [&](const auto& scores) {
#pragma unroll
          for (int nt = 0; nt < kWarpKeys / 8; ++nt) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              s[0][nt][2 * r + e] = scores.log2(s[0][nt][2 * r + e], row_i[r], n0 + nt * 8 + 2 * t + e);
            }
          }
        });
      }
      const Span keys = row_keys[r].shifted(n0 + 2 * t);
#pragma unroll
      for (int nt = 0; nt < kWarpKeys / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          if (!keys.has(nt * 8 + e)) s[0][nt][2 * r + e] = -INFINITY;
        }
      }
    }

    // Online softmax (flash_attention_2's forward with one m16 tile): new row maxima, and O
    // rescaled by exp2((old max - new max) * c) only when some row of the warp grew.
    bool grew = false;
    float alpha[2], neg_base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = row_max[r];
#pragma unroll
      for (int nt = 0; nt < kWarpKeys / 8; ++nt) mx = fmaxf(mx, fmaxf(s[0][nt][2 * r], s[0][nt][2 * r + 1]));
      mx = quad_max(mx);
      neg_base[r] = mx == -INFINITY ? 0.f : -mx * c;
      const bool row_grew = mx != row_max[r];
      grew |= row_grew;
      alpha[r] = row_grew ? fast_exp2(fmaf(row_max[r], c, neg_base[r])) : 1.f;
      row_max[r] = mx;
      row_sum[r] *= alpha[r];
    }
    if (__any_sync(0xffffffffu, grew)) {
#pragma unroll
      for (int dt = 0; dt < HD / 8; ++dt) {
        o[0][dt][0] *= alpha[0];
        o[0][dt][1] *= alpha[0];
        o[0][dt][2] *= alpha[1];
        o[0][dt][3] *= alpha[1];
      }
    }

    // O += P V: P = exp2(s * c - max * c) rounded to T as the A operand (the C layout of two n8
    // tiles is the A layout of one k16 step).
    float sum[2] = {0.f, 0.f};
    auto p_frags = [&](int kk, uint32_t(&f)[1][4]) {
#pragma unroll
      for (int nt = 2 * kk; nt < 2 * kk + 2; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[0][nt][e] = fast_exp2(fmaf(s[0][nt][e], c, neg_base[e / 2]));
        sum[0] += s[0][nt][0] + s[0][nt][1];
        sum[1] += s[0][nt][2] + s[0][nt][3];
      }
      accum_to_a<T>(f[0], s[0][2 * kk], s[0][2 * kk + 1]);
    };
    gemm_xs<T, 1, kWarpKeys, HD, Layout::kTransposed, HD, decltype(p_frags), NoStep, typename G::KVRows>(o, p_frags, wV,
                                                                                                         lane);
    row_sum[0] += sum[0];
    row_sum[1] += sum[1];
    group_sync<kGroups>(part);  // every warp is done with `buf` before the next tile's copies refill it
  }
  cp_async_wait<0>();
  __syncthreads();  // the K/V buffers are free: the merge reuses them

  // The warps' states through shared memory: O [kBlockWarps][kRows][kOStride], max and sum
  // [kBlockWarps][kRows].
  float* m_o = reinterpret_cast<float*>(sKV);
  float* m_max = m_o + kBlockWarps * kRows * G::kOStride;
  float* m_sum = m_max + kBlockWarps * kRows;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int m = g + 8 * r;
    const float total = quad_sum(row_sum[r]);
    if (t == 0) {
      m_max[warp * kRows + m] = row_max[r];
      m_sum[warp * kRows + m] = total;
    }
#pragma unroll
    for (int dt = 0; dt < HD / 8; ++dt) {
      *reinterpret_cast<float2*>(m_o + (warp * kRows + m) * G::kOStride + dt * 8 + 2 * t) =
          make_float2(o[0][dt][2 * r], o[0][dt][2 * r + 1]);
    }
  }
  __syncthreads();

  // Merge by the warps' maxima (the LSE merge of split-KV, inside the block), normalize, and
  // write 8 columns of one row per item: out (and lse), or this split's partial output and LSE.
  const int64_t all_rows = static_cast<int64_t>(a.heads_q) * a.total_q;
  for (int item = tid; item < rows * G::kChunks; item += kBlockThreads) {
    const int m = item / G::kChunks, col = (item % G::kChunks) * 8;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kBlockWarps; ++w) mx = fmaxf(mx, m_max[w * kRows + m]);
    float f[kBlockWarps], total = 0.f;
#pragma unroll
    for (int w = 0; w < kBlockWarps; ++w) {
      const float wm = m_max[w * kRows + m];
      f[w] = wm == -INFINITY ? 0.f : fast_exp2((wm - mx) * c);
      total += f[w] * m_sum[w * kRows + m];
    }
    const RowEnd end = policy.row_end(mx, total, c);
    const float inv = end.inv();
    float x[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int w = 0; w < kBlockWarps; ++w) {
      const float4* src = reinterpret_cast<const float4*>(m_o + (w * kRows + m) * G::kOStride + col);
      const float4 lo = src[0], hi = src[1];
      x[0] += f[w] * lo.x;
      x[1] += f[w] * lo.y;
      x[2] += f[w] * lo.z;
      x[3] += f[w] * lo.w;
      x[4] += f[w] * hi.x;
      x[5] += f[w] * hi.y;
      x[6] += f[w] * hi.z;
      x[7] += f[w] * hi.w;
    }
    const int rr = r0 + m, i = rr / group, h = kv_head * group + rr % group;
    const int64_t lse_row = lse_index(a, seq, h, i);
    if (p.num_splits == 1) {
      uint4 packed;
      packed.x = pack2<T>(x[0] * inv, x[1] * inv);
      packed.y = pack2<T>(x[2] * inv, x[3] * inv);
      packed.z = pack2<T>(x[4] * inv, x[5] * inv);
      packed.w = pack2<T>(x[6] * inv, x[7] * inv);
      *reinterpret_cast<uint4*>(query_row<T>(a, a.out, b, i, h) + col) = packed;
      if (a.lse != nullptr && col == 0) a.lse[lse_row] = end.lse();
    } else {
      float4* dst = reinterpret_cast<float4*>(p.partial_out + (split * all_rows + lse_row) * HD + col);
      dst[0] = make_float4(x[0] * inv, x[1] * inv, x[2] * inv, x[3] * inv);
      dst[1] = make_float4(x[4] * inv, x[5] * inv, x[6] * inv, x[7] * inv);
      if (col == 0) p.partial_lse[split * all_rows + lse_row] = end.lse();
    }
  }
}

template <class T, class Policy, int HD, int kGroups>
cudaError_t launch_attention(const PagedParams& p, cudaStream_t stream) {
  auto kernel = paged_attention_kernel<T, Policy, HD, kGroups>;
  constexpr size_t smem = smem_bytes<HD, kGroups>();
  if (smem > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (e != cudaSuccess) return e;
  }
  const dim3 grid(static_cast<unsigned>(p.attn.batch * p.attn.heads_kv), static_cast<unsigned>(p.row_blocks),
                  static_cast<unsigned>(p.num_splits));
  kernel<<<grid, kThreads * kGroups, smem, stream>>>(p);
  return cudaGetLastError();
}

template <class Policy, int HD>
cudaError_t run_attention(const PagedParams& p, bool bf16, cudaStream_t stream) {
  if (p.groups == 2) {
    if constexpr (kTwoGroups<HD>) {
      return bf16 ? launch_attention<__nv_bfloat16, Policy, HD, 2>(p, stream)
                  : launch_attention<__half, Policy, HD, 2>(p, stream);
    } else {
      return cudaErrorInvalidValue;  // the plugin asks blocks_per_sm(bf16, 2) first
    }
  }
  return bf16 ? launch_attention<__nv_bfloat16, Policy, HD, 1>(p, stream)
              : launch_attention<__half, Policy, HD, 1>(p, stream);
}

// Resident blocks per SM of one kernel, 0 where it cannot be launched. A failed query leaves its
// error as the thread's last one: cleared, so the next launch's cudaGetLastError reports that
// launch.
template <class T, class Policy, int HD, int kGroups>
int resident_blocks() {
  auto kernel = paged_attention_kernel<T, Policy, HD, kGroups>;
  constexpr size_t smem = smem_bytes<HD, kGroups>();
  if (smem > 48 * 1024 &&
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;  // more than the device's opt-in limit (sm_80's 163 KB)
  }
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kThreads * kGroups, smem) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return blocks;
}

template <class Policy, int HD>
int blocks_per_sm(bool bf16, int groups) {
  if (groups == 2) {
    if constexpr (kTwoGroups<HD>) {
      return bf16 ? resident_blocks<__nv_bfloat16, Policy, HD, 2>() : resident_blocks<__half, Policy, HD, 2>();
    }
    return 0;
  }
  const int blocks = bf16 ? resident_blocks<__nv_bfloat16, Policy, HD, 1>() : resident_blocks<__half, Policy, HD, 1>();
  return blocks > 0 ? blocks : 1;
}

}  // namespace attnrt::cuda::paged

#define ATTNRT_PAGED_INSTANTIATE(Policy, HD)                                                                         \
  template cudaError_t attnrt::cuda::paged::run_attention<Policy, HD>(const attnrt::cuda::paged::PagedParams&, bool, \
                                                                      cudaStream_t);                                 \
  template int attnrt::cuda::paged::blocks_per_sm<Policy, HD>(bool, int);
