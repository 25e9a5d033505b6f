// Device helpers of the two-GPU ring test (context_parallel_2gpu_kernels.hpp). The references are
// plain fp64 loops, written for clarity: a block per sampled (row, head) or (column, kv head),
// a thread per key (or query) for the dot products, a thread per feature for the sums.
#include "context_parallel_2gpu_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace attnrt::cp_test {
namespace {

constexpr int kThreads = 128;  // head_dim <= 128

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::abort();
  }
}

__device__ __forceinline__ double ld(const void* p, int64_t i) {
  return double(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
}

__device__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void fill_random_kernel(__nv_bfloat16* dst, int64_t n, uint64_t seed, float stddev) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t h = splitmix64(seed * 0x100000001b3ull + uint64_t(i));
    const float u1 = (float((h >> 40) & 0xffffff) + 1.0f) / 16777217.0f;  // (0, 1]
    const float u2 = float((h >> 8) & 0xffffff) / 16777216.0f;
    dst[i] = __float2bfloat16_rn(stddev * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2));
  }
}

// Block-wide reductions over kThreads threads (shared scratch of kThreads doubles).
__device__ double block_max(double x, double* scratch) {
  scratch[threadIdx.x] = x;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) scratch[threadIdx.x] = fmax(scratch[threadIdx.x], scratch[threadIdx.x + s]);
    __syncthreads();
  }
  const double r = scratch[0];
  __syncthreads();
  return r;
}

__device__ double block_sum(double x, double* scratch) {
  scratch[threadIdx.x] = x;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const double r = scratch[0];
  __syncthreads();
  return r;
}

// Keys (or query rows) per block of the references: the sums are split across blocks so that
// a 256k-token row keeps the whole GPU busy, then merged (rows: by their maxima; columns: fp64
// atomics, whose order does not matter at fp64 against bf16 errors).
constexpr int64_t kSpan = 2048;

// Partial sums of one (row, head, key span), unnormalised with the span's running maximum m:
// l = sum e^(s-m), o_c = sum e^(s-m) v_c, A_c = sum e^(s-m) dp k_c, B_c = sum e^(s-m) k_c.
struct RowPartial {
  double m, l;
};

__global__ void reference_rows_partial(Problem p, const void* q, const void* k, const void* v, const void* dout,
                                       const int64_t* rows, RowPartial* part, double* o_part, double* a_part,
                                       double* b_part) {
  __shared__ double qs[kThreads], ds[kThreads], S_[kThreads], DP[kThreads], scratch[kThreads];
  const int hq = p.heads_q, d = p.head_dim, t = threadIdx.x;
  const int rr = blockIdx.x / hq, h = blockIdx.x % hq, g = h / (hq / p.heads_kv);
  const int64_t i = rows[rr], S = p.seqlen, split = blockIdx.y, splits = gridDim.y;
  int64_t lo = p.window_left < 0 ? 0 : max(int64_t(0), i - p.window_left);
  int64_t hi = p.window_right < 0 ? S - 1 : min(S - 1, i + p.window_right);
  lo = max(lo, split * kSpan);
  hi = min(hi, (split + 1) * kSpan - 1);
  qs[t] = t < d ? ld(q, (i * hq + h) * d + t) : 0.0;
  ds[t] = t < d ? ld(dout, (i * hq + h) * d + t) : 0.0;
  __syncthreads();
  double m = -INFINITY, l = 0, o = 0, A = 0, B = 0;
  for (int64_t base = lo; base <= hi; base += kThreads) {
    const int64_t j = base + t;
    double s = -INFINITY, dp = 0;
    if (j <= hi) {
      s = 0;
      for (int c = 0; c < d; ++c) {
        const int64_t at = (j * p.heads_kv + g) * d + c;
        s += qs[c] * ld(k, at);
        dp += ds[c] * ld(v, at);
      }
      s *= double(p.scale);
    }
    const double m_new = fmax(m, block_max(s, scratch));
    const double rescale = m == -INFINITY ? 0.0 : exp(m - m_new);
    S_[t] = s == -INFINITY ? 0.0 : exp(s - m_new);
    DP[t] = dp;
    __syncthreads();
    l = l * rescale + block_sum(S_[t], scratch);
    o *= rescale, A *= rescale, B *= rescale;
    if (t < d) {
      for (int u = 0; u < kThreads && base + u <= hi; ++u) {
        const int64_t at = ((base + u) * p.heads_kv + g) * d + t;
        const double kc = ld(k, at);
        o += S_[u] * ld(v, at);
        A += S_[u] * DP[u] * kc;
        B += S_[u] * kc;
      }
    }
    m = m_new;
    __syncthreads();
  }
  const int64_t slot = int64_t(blockIdx.x) * splits + split;
  if (t == 0) part[slot] = {m, l};
  if (t < d) o_part[slot * d + t] = o, a_part[slot * d + t] = A, b_part[slot * d + t] = B;
}

// Merges the spans of each (row, head): lse = M + log L; out = O / L; dq = scale (A - D B) / L
// with D = dout . out (FlashAttention-2, Algorithm 2: dq_i = scale sum_j p_ij (dp_ij - D_i) k_j).
__global__ void reference_rows_merge(Problem p, const void* dout, const int64_t* rows, int splits,
                                     const RowPartial* part, const double* o_part, const double* a_part,
                                     const double* b_part, double* out, double* lse_out, double* dq) {
  __shared__ double scratch[kThreads];
  const int hq = p.heads_q, d = p.head_dim, t = threadIdx.x;
  const int rr = blockIdx.x / hq, h = blockIdx.x % hq;
  const int64_t first = int64_t(blockIdx.x) * splits;
  double M = -INFINITY;
  for (int s = 0; s < splits; ++s) M = fmax(M, part[first + s].m);
  double L = 0, o = 0, A = 0, B = 0;
  for (int s = 0; s < splits; ++s) {
    const RowPartial ps = part[first + s];
    if (ps.m == -INFINITY) continue;
    const double w = exp(ps.m - M);
    L += w * ps.l;
    if (t < d) {
      o += w * o_part[(first + s) * d + t];
      A += w * a_part[(first + s) * d + t];
      B += w * b_part[(first + s) * d + t];
    }
  }
  o /= L, A /= L, B /= L;
  const double dout_c = t < d ? ld(dout, (rows[rr] * hq + h) * d + t) : 0.0;
  const double D = block_sum(dout_c * o, scratch);
  if (t < d) {
    out[(int64_t(rr) * hq + h) * d + t] = o;
    dq[(int64_t(rr) * hq + h) * d + t] = double(p.scale) * (A - D * B);
  }
  if (t == 0) lse_out[int64_t(rr) * hq + h] = M + log(L);
}

__device__ __forceinline__ double bf16r(double x) { return double(__bfloat162float(__float2bfloat16_rn(float(x)))); }

// dk, dv of one key column j from one q head h (blockIdx.z: h's place in its kv group) and one
// span of query rows (blockIdx.y), added with fp64 atomics into per-q-head sums dk_h, dv_h
// [C, hq, d] (zeroed by the caller; cols_finish reduces the group). Exact: dv_h = sum_i p_ij dout_i,
// dk_h = sum_i p_ij (dp_ij - D_i) q_i (times scale later). Eager (emulate): the same sums with the
// roundings of PyTorch's bf16 attention (FlashAttention's attention_ref): scores bf16(bf16(q
// scale) . k), P = bf16(softmax), dP = bf16(dout . v), dS = bf16(P (dP - D)).
__global__ void reference_cols_kernel(Problem p, const void* q, const void* k, const void* v, const void* dout,
                                      const void* out, const float* lse, const int64_t* cols, bool emulate,
                                      double* dk_h, double* dv_h) {
  __shared__ double ks[kThreads], vs[kThreads], P[kThreads], G[kThreads];
  const int hq = p.heads_q, hkv = p.heads_kv, d = p.head_dim, t = threadIdx.x;
  const int cc = blockIdx.x / hkv, g = blockIdx.x % hkv, group = hq / hkv;
  const int h = g * group + int(blockIdx.z);
  const int64_t j = cols[cc], S = p.seqlen;
  // The queries that see key j: i - wl <= j <= i + wr.
  int64_t lo = p.window_right < 0 ? 0 : max(int64_t(0), j - p.window_right);
  int64_t hi = p.window_left < 0 ? S - 1 : min(S - 1, j + p.window_left);
  lo = max(lo, int64_t(blockIdx.y) * kSpan);
  hi = min(hi, int64_t(blockIdx.y + 1) * kSpan - 1);
  if (lo > hi) return;
  ks[t] = t < d ? ld(k, (j * hkv + g) * d + t) : 0.0;
  vs[t] = t < d ? ld(v, (j * hkv + g) * d + t) : 0.0;
  __syncthreads();
  const double scale = double(p.scale);
  auto q_at = [&](int64_t at) { return emulate ? bf16r(ld(q, at) * scale) : ld(q, at); };
  double dk_c = 0, dv_c = 0;
  for (int64_t base = lo; base <= hi; base += kThreads) {
    const int64_t i = base + t;
    if (i <= hi) {
      double s = 0, dp = 0, D = 0;
      for (int c = 0; c < d; ++c) {
        const int64_t at = (i * hq + h) * d + c;
        const double dout_c = ld(dout, at);
        s += q_at(at) * ks[c];
        dp += dout_c * vs[c];
        D += dout_c * ld(out, at);
      }
      s = emulate ? bf16r(s) : s * scale;
      double prob = exp(s - double(lse[int64_t(h) * S + i]));
      if (emulate) prob = bf16r(prob), dp = bf16r(dp);
      P[t] = prob;
      G[t] = emulate ? bf16r(prob * (dp - D)) : prob * (dp - D);
    } else {
      P[t] = 0, G[t] = 0;
    }
    __syncthreads();
    if (t < d) {
      for (int u = 0; u < kThreads && base + u <= hi; ++u) {
        const int64_t at = ((base + u) * hq + h) * d + t;
        dv_c += P[u] * ld(dout, at);
        dk_c += G[u] * q_at(at);
      }
    }
    __syncthreads();
  }
  if (t < d) {
    atomicAdd(&dk_h[(int64_t(cc) * hq + h) * d + t], dk_c);
    atomicAdd(&dv_h[(int64_t(cc) * hq + h) * d + t], dv_c);
  }
}

// dk, dv [C, hkv, d] from the per-q-head sums: exact, scale sum_h dk_h and sum_h dv_h; eager, the
// bf16 gradient of each q head's copy of k (repeat_interleave), summed over the group in bf16.
__global__ void cols_finish(Problem p, int num_cols, bool emulate, const double* dk_h, const double* dv_h, double* dk,
                            double* dv) {
  const int hq = p.heads_q, hkv = p.heads_kv, d = p.head_dim, group = hq / hkv;
  const int64_t n = int64_t(num_cols) * hkv * d;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = e % d, g = e / d % hkv, cc = e / d / hkv;
    double sk = 0, sv = 0;
    for (int m = 0; m < group; ++m) {
      const int64_t at = (cc * hq + g * group + m) * d + c;
      sk += emulate ? bf16r(dk_h[at]) : dk_h[at];
      sv += emulate ? bf16r(dv_h[at]) : dv_h[at];
    }
    dk[e] = emulate ? bf16r(sk) : double(p.scale) * sk;
    dv[e] = emulate ? bf16r(sv) : sv;
  }
}

// PyTorch's bf16 eager attention on sampled rows (the rule's baseline, docs/gpu.md), in three
// passes over key spans, each merged across spans: (0) the softmax's max and sum of the bf16
// scores -> lse; (1) out = bf16(sum P v) and D = sum P dP (softmax backward, fp32 inside);
// (2) dq = bf16(bf16(sum dS k) scale). P = bf16(exp(s - lse)), dP = bf16(dout . v),
// dS = bf16(P (dP - D)); scores s = bf16(bf16(q scale) . k).
__global__ void eager_rows_pass(Problem p, int mode, const void* q, const void* k, const void* v, const void* dout,
                                const int64_t* rows, const double* lse_e, const double* D_e, double* stat_part,
                                double* vec_part) {
  __shared__ double qs[kThreads], ds[kThreads], X[kThreads], scratch[kThreads];
  const int hq = p.heads_q, d = p.head_dim, t = threadIdx.x;
  const int rr = blockIdx.x / hq, h = blockIdx.x % hq, g = h / (hq / p.heads_kv);
  const int64_t i = rows[rr], S = p.seqlen, split = blockIdx.y, splits = gridDim.y;
  int64_t lo = p.window_left < 0 ? 0 : max(int64_t(0), i - p.window_left);
  int64_t hi = p.window_right < 0 ? S - 1 : min(S - 1, i + p.window_right);
  lo = max(lo, split * kSpan);
  hi = min(hi, (split + 1) * kSpan - 1);
  qs[t] = t < d ? bf16r(ld(q, (i * hq + h) * d + t) * double(p.scale)) : 0.0;
  ds[t] = t < d ? ld(dout, (i * hq + h) * d + t) : 0.0;
  __syncthreads();
  const int64_t slot = int64_t(blockIdx.x) * splits + split;
  const double lse = mode > 0 ? lse_e[blockIdx.x] : 0.0, D = mode > 1 ? D_e[blockIdx.x] : 0.0;
  double m = -INFINITY, l = 0, acc = 0, dsum = 0;
  for (int64_t base = lo; base <= hi; base += kThreads) {
    const int64_t j = base + t;
    double x = 0;
    if (j <= hi) {
      double s = 0, dp = 0;
      for (int c = 0; c < d; ++c) {
        const int64_t at = (j * p.heads_kv + g) * d + c;
        s += qs[c] * ld(k, at);
        if (mode > 0) dp += ds[c] * ld(v, at);
      }
      s = bf16r(s);
      if (mode == 0) {
        const double m_new = fmax(m, s);
        l = l * exp(m - m_new) + exp(s - m_new);
        m = m_new;
      } else {
        const double prob = bf16r(exp(s - lse));
        dp = bf16r(dp);
        if (mode == 1) {
          x = prob;
          dsum += prob * dp;
        } else {
          x = bf16r(prob * (dp - D));
        }
      }
    }
    if (mode > 0) {
      X[t] = x;
      __syncthreads();
      if (t < d) {
        for (int u = 0; u < kThreads && base + u <= hi; ++u) {
          const int64_t at = ((base + u) * p.heads_kv + g) * d + t;
          acc += X[u] * ld(mode == 1 ? v : k, at);
        }
      }
      __syncthreads();
    }
  }
  if (mode == 0) {
    const double M = block_max(m, scratch);
    const double L = block_sum(m == -INFINITY ? 0.0 : l * exp(m - M), scratch);
    if (t == 0) stat_part[slot * 2] = M, stat_part[slot * 2 + 1] = L;
  } else {
    if (mode == 1) {
      const double sum = block_sum(dsum, scratch);
      if (t == 0) stat_part[slot] = sum;
    }
    if (t < d) vec_part[slot * d + t] = acc;
  }
}

// The merges of eager_rows_pass across spans. Pass 0: a thread per (row, head): lse = M + log L.
__global__ void eager_lse_merge(int splits, int num_slots, const double* stat_part, double* lse_e) {
  const int slot = blockIdx.x * blockDim.x + threadIdx.x;
  if (slot >= num_slots) return;
  const double* part = stat_part + int64_t(slot) * splits * 2;
  double M = -INFINITY, L = 0;
  for (int s = 0; s < splits; ++s) M = fmax(M, part[2 * s]);
  for (int s = 0; s < splits; ++s) {
    if (part[2 * s] != -INFINITY) L += part[2 * s + 1] * exp(part[2 * s] - M);
  }
  lse_e[slot] = M + log(L);
}

// Passes 1 and 2: a block per (row, head), a thread per feature; pass 1 also sums D.
__global__ void eager_vec_merge(Problem p, int mode, int splits, const double* stat_part, const double* vec_part,
                                double* D_e, double* vec_out) {
  const int d = p.head_dim, t = threadIdx.x;
  const int64_t slot = blockIdx.x;
  if (mode == 1 && t == 0) {
    double sum = 0;
    for (int s = 0; s < splits; ++s) sum += stat_part[slot * splits + s];
    D_e[slot] = sum;
  }
  if (t >= d) return;
  double sum = 0;
  for (int s = 0; s < splits; ++s) sum += vec_part[(slot * splits + s) * d + t];
  vec_out[slot * d + t] = mode == 1 ? bf16r(sum) : bf16r(bf16r(sum) * double(p.scale));
}

__device__ void record_diff(double diff, double* result, double* scratch) {
  const double m = block_max(diff, scratch);
  // Non-negative doubles (inf included) order like their bit patterns.
  if (threadIdx.x == 0) atomicMax(reinterpret_cast<unsigned long long*>(result), __double_as_longlong(m));
}

__global__ void max_diff_rows_kernel(const void* a, const void* b, bool is_f32, int64_t rows, int64_t width,
                                     const int64_t* chunk_starts, int64_t chunk, double* result,
                                     unsigned long long* nonfinite) {
  __shared__ double scratch[kThreads];
  double worst = 0;
  const int64_t n = rows * width;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t base = int64_t(blockIdx.x) * blockDim.x; base < n; base += stride) {  // uniform trip count
    const int64_t e = base + threadIdx.x;
    if (e < n) {
      const int64_t r = e / width, w = e % width;
      const int64_t gr = chunk_starts[r / chunk] + r % chunk;
      const double x = is_f32 ? double(static_cast<const float*>(a)[e]) : ld(a, e);
      const double y = is_f32 ? double(static_cast<const float*>(b)[gr * width + w]) : ld(b, gr * width + w);
      if (!isfinite(x)) atomicAdd(nonfinite, 1ull);
      worst = fmax(worst, isfinite(x) && isfinite(y) ? fabs(x - y) : INFINITY);
    }
  }
  record_diff(worst, result, scratch);
}

__global__ void max_diff_lse_kernel(const float* a, const float* b, int heads, int64_t rows, int64_t seqlen,
                                    const int64_t* chunk_starts, int64_t chunk, double* result,
                                    unsigned long long* nonfinite) {
  __shared__ double scratch[kThreads];
  double worst = 0;
  const int64_t n = int64_t(heads) * rows;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t base = int64_t(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const int64_t e = base + threadIdx.x;
    if (e < n) {
      const int64_t h = e / rows, r = e % rows;
      const int64_t gr = chunk_starts[r / chunk] + r % chunk;
      const double x = a[e], y = b[h * seqlen + gr];
      if (!isfinite(x)) atomicAdd(nonfinite, 1ull);
      worst = fmax(worst, isfinite(x) && isfinite(y) ? fabs(x - y) : INFINITY);
    }
  }
  record_diff(worst, result, scratch);
}

__global__ void max_abs_kernel(const void* a, bool is_f32, int64_t n, double* result) {
  __shared__ double scratch[kThreads];
  double worst = 0;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t base = int64_t(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const int64_t e = base + threadIdx.x;
    if (e < n) {
      const double x = is_f32 ? double(static_cast<const float*>(a)[e]) : ld(a, e);
      if (isfinite(x)) worst = fmax(worst, fabs(x));
    }
  }
  record_diff(worst, result, scratch);
}

unsigned blocks_for(int64_t n) { return unsigned(std::min<int64_t>((n + kThreads - 1) / kThreads, 132 * 16)); }

}  // namespace

void fill_random_bf16(void* dst, int64_t n, uint64_t seed, float stddev, void* stream) {
  fill_random_kernel<<<blocks_for(n), kThreads, 0, cudaStream_t(stream)>>>(static_cast<__nv_bfloat16*>(dst), n, seed,
                                                                           stddev);
  check(cudaGetLastError(), "fill_random_bf16");
}

void reference_rows(const Problem& p, const void* q, const void* k, const void* v, const void* dout,
                    const int64_t* rows_dev, int num_rows, double* out, double* lse, double* dq, void* stream) {
  if (p.head_dim > kThreads || num_rows == 0) return;
  const int splits = int((p.seqlen + kSpan - 1) / kSpan);
  const int64_t slots = int64_t(num_rows) * p.heads_q * splits;
  RowPartial* part = nullptr;
  double *o = nullptr, *a = nullptr, *b = nullptr;
  check(cudaMalloc(&part, slots * sizeof(RowPartial)), "reference_rows: cudaMalloc");
  check(cudaMalloc(&o, slots * p.head_dim * sizeof(double)), "reference_rows: cudaMalloc");
  check(cudaMalloc(&a, slots * p.head_dim * sizeof(double)), "reference_rows: cudaMalloc");
  check(cudaMalloc(&b, slots * p.head_dim * sizeof(double)), "reference_rows: cudaMalloc");
  const dim3 grid(unsigned(num_rows * p.heads_q), unsigned(splits));
  reference_rows_partial<<<grid, kThreads, 0, cudaStream_t(stream)>>>(p, q, k, v, dout, rows_dev, part, o, a, b);
  check(cudaGetLastError(), "reference_rows_partial");
  reference_rows_merge<<<num_rows * p.heads_q, kThreads, 0, cudaStream_t(stream)>>>(p, dout, rows_dev, splits, part, o,
                                                                                    a, b, out, lse, dq);
  check(cudaGetLastError(), "reference_rows_merge");
  check(cudaStreamSynchronize(cudaStream_t(stream)), "reference_rows");
  cudaFree(part), cudaFree(o), cudaFree(a), cudaFree(b);
}

namespace {

void cols(const Problem& p, const void* q, const void* k, const void* v, const void* dout, const void* out,
          const float* lse, const int64_t* cols_dev, int num_cols, bool emulate, double* dk, double* dv, void* stream) {
  if (p.head_dim > kThreads || num_cols == 0) return;
  const size_t per_head = size_t(num_cols) * p.heads_q * p.head_dim * sizeof(double);
  double *dk_h = nullptr, *dv_h = nullptr;
  check(cudaMalloc(&dk_h, per_head), "reference_cols: cudaMalloc");
  check(cudaMalloc(&dv_h, per_head), "reference_cols: cudaMalloc");
  check(cudaMemsetAsync(dk_h, 0, per_head, cudaStream_t(stream)), "reference_cols: memset");
  check(cudaMemsetAsync(dv_h, 0, per_head, cudaStream_t(stream)), "reference_cols: memset");
  const dim3 grid(unsigned(num_cols * p.heads_kv), unsigned((p.seqlen + kSpan - 1) / kSpan),
                  unsigned(p.heads_q / p.heads_kv));
  reference_cols_kernel<<<grid, kThreads, 0, cudaStream_t(stream)>>>(p, q, k, v, dout, out, lse, cols_dev, emulate,
                                                                     dk_h, dv_h);
  check(cudaGetLastError(), "reference_cols");
  cols_finish<<<blocks_for(int64_t(num_cols) * p.heads_kv * p.head_dim), kThreads, 0, cudaStream_t(stream)>>>(
      p, num_cols, emulate, dk_h, dv_h, dk, dv);
  check(cudaGetLastError(), "cols_finish");
  check(cudaStreamSynchronize(cudaStream_t(stream)), "reference_cols");
  cudaFree(dk_h), cudaFree(dv_h);
}

}  // namespace

void reference_cols(const Problem& p, const void* q, const void* k, const void* v, const void* dout, const void* out,
                    const float* lse, const int64_t* cols_dev, int num_cols, double* dk, double* dv, void* stream) {
  cols(p, q, k, v, dout, out, lse, cols_dev, num_cols, false, dk, dv, stream);
}

void eager_cols(const Problem& p, const void* q, const void* k, const void* v, const void* dout, const void* out,
                const float* lse, const int64_t* cols_dev, int num_cols, double* dk, double* dv, void* stream) {
  cols(p, q, k, v, dout, out, lse, cols_dev, num_cols, true, dk, dv, stream);
}

void eager_rows(const Problem& p, const void* q, const void* k, const void* v, const void* dout,
                const int64_t* rows_dev, int num_rows, double* out, double* lse, double* dq, void* stream) {
  if (p.head_dim > kThreads || num_rows == 0) return;
  const int splits = int((p.seqlen + kSpan - 1) / kSpan);
  const int slots = num_rows * p.heads_q;
  double *stat = nullptr, *vec = nullptr, *D = nullptr;
  check(cudaMalloc(&stat, size_t(slots) * splits * 2 * sizeof(double)), "eager_rows: cudaMalloc");
  check(cudaMalloc(&vec, size_t(slots) * splits * p.head_dim * sizeof(double)), "eager_rows: cudaMalloc");
  check(cudaMalloc(&D, size_t(slots) * sizeof(double)), "eager_rows: cudaMalloc");
  const cudaStream_t s = cudaStream_t(stream);
  const dim3 grid{unsigned(slots), unsigned(splits)};
  eager_rows_pass<<<grid, kThreads, 0, s>>>(p, 0, q, k, v, dout, rows_dev, nullptr, nullptr, stat, vec);
  eager_lse_merge<<<(slots + kThreads - 1) / kThreads, kThreads, 0, s>>>(splits, slots, stat, lse);
  eager_rows_pass<<<grid, kThreads, 0, s>>>(p, 1, q, k, v, dout, rows_dev, lse, nullptr, stat, vec);
  eager_vec_merge<<<slots, kThreads, 0, s>>>(p, 1, splits, stat, vec, D, out);
  eager_rows_pass<<<grid, kThreads, 0, s>>>(p, 2, q, k, v, dout, rows_dev, lse, D, stat, vec);
  eager_vec_merge<<<slots, kThreads, 0, s>>>(p, 2, splits, stat, vec, D, dq);
  check(cudaGetLastError(), "eager_rows");
  check(cudaStreamSynchronize(s), "eager_rows");
  cudaFree(stat), cudaFree(vec), cudaFree(D);
}

void max_diff_rows(const void* a, const void* b, bool is_f32, int64_t rows, int64_t width, const int64_t* chunk_starts,
                   int64_t chunk, double* result_dev, unsigned long long* nonfinite_dev, void* stream) {
  max_diff_rows_kernel<<<blocks_for(rows * width), kThreads, 0, cudaStream_t(stream)>>>(
      a, b, is_f32, rows, width, chunk_starts, chunk, result_dev, nonfinite_dev);
  check(cudaGetLastError(), "max_diff_rows");
}

void max_diff_lse(const float* a, const float* b, int heads, int64_t rows, int64_t seqlen, const int64_t* chunk_starts,
                  int64_t chunk, double* result_dev, unsigned long long* nonfinite_dev, void* stream) {
  max_diff_lse_kernel<<<blocks_for(int64_t(heads) * rows), kThreads, 0, cudaStream_t(stream)>>>(
      a, b, heads, rows, seqlen, chunk_starts, chunk, result_dev, nonfinite_dev);
  check(cudaGetLastError(), "max_diff_lse");
}

void max_abs(const void* a, bool is_f32, int64_t n, double* result_dev, void* stream) {
  max_abs_kernel<<<blocks_for(n), kThreads, 0, cudaStream_t(stream)>>>(a, is_f32, n, result_dev);
  check(cudaGetLastError(), "max_abs");
}

}  // namespace attnrt::cp_test
