// A paged-KV test case and its non-paged twin (the CPU tests and the GPU tests share it): random
// q, k, v per sequence; the paged call stores k/v in pages assigned in shuffled order, with
// pages no sequence uses filled with NaN (a kernel that reads outside its pages shows) and
// block_table padded with -1 past every sequence's used pages (Hugging Face's padding: never
// read); the dense call holds the same values contiguously (varlen, cu_seqlens_q/k), which the
// fp64 reference computes. Queries are padded [batch, seqlen_q, ...] (decode, multi-token
// decode, padded chunked prefill) or packed by cu_seqlens_q (ABI 1.2: chunked prefill).
#pragma once

#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/workload.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnrt::test {

struct PagedSpec {
  attnrt_dtype dtype = ATTNRT_DTYPE_FP32;
  std::vector<int32_t> q_lens, k_lens;  // per sequence; k_len >= 0, q_len >= 1
  bool varlen_q = false;                // packed queries; else every q_len must be equal
  int32_t heads_q = 4, heads_kv = 2, head_dim = 64, page_size = 16;
  bool causal = true;
  int32_t window_left = -1, window_right = -1;
  float softcap = 0.0f;
  bool sinks = false;
  int32_t spare_pages = 3;  // NaN-filled pages no sequence uses
  uint64_t seed = 1;
};

struct PagedCase {
  Workload paged, dense;
  std::vector<int32_t> pages_of;  // flat [batch][max_pages] block table (-1 padded)
  int32_t max_pages = 0;
};

inline DLDataType dl_of(attnrt_dtype t) {
  return t == ATTNRT_DTYPE_FP16   ? DLDataType{kDLFloat, 16, 1}
         : t == ATTNRT_DTYPE_BF16 ? DLDataType{kDLBfloat, 16, 1}
                                  : DLDataType{kDLFloat, 32, 1};
}

inline PagedCase make_paged_case(const PagedSpec& s) {
  std::mt19937_64 rng(s.seed);
  const int32_t batch = static_cast<int32_t>(s.q_lens.size());
  const DLDataType dt = dl_of(s.dtype), i32{kDLInt, 32, 1}, f32{kDLFloat, 32, 1};
  const int32_t max_q = *std::max_element(s.q_lens.begin(), s.q_lens.end());
  if (!s.varlen_q && *std::min_element(s.q_lens.begin(), s.q_lens.end()) != max_q) {
    throw std::invalid_argument("make_paged_case: padded queries need equal q_lens (set varlen_q)");
  }
  const int32_t max_k = std::max(1, *std::max_element(s.k_lens.begin(), s.k_lens.end()));
  int64_t total_q = 0, total_k = 0;
  std::vector<int32_t> cu_q(batch + 1, 0), cu_k(batch + 1, 0);
  for (int32_t b = 0; b < batch; ++b) {
    cu_q[b + 1] = cu_q[b] + s.q_lens[b];
    cu_k[b + 1] = cu_k[b] + s.k_lens[b];
  }
  total_q = cu_q[batch];
  total_k = cu_k[batch];
  const int32_t hd = s.head_dim;

  attnrt_attention_desc d{};
  d.struct_size = sizeof d;
  d.dtype = s.dtype;
  d.head_dim = d.head_dim_v = hd;
  d.heads_q = s.heads_q;
  d.heads_kv = s.heads_kv;
  d.batch = batch;
  d.seqlen_q = max_q;
  d.seqlen_k = max_k;
  d.softmax_scale = 1.0f / std::sqrt(static_cast<float>(hd));
  d.causal = s.causal;
  d.window_left = s.window_left;
  d.window_right = s.window_right;
  d.softcap = s.softcap;
  d.has_sinks = s.sinks;
  d.return_lse = 1;
  d.device = DLDevice{kDLCPU, 0};

  PagedCase c;
  // Dense twin: packed q, k, v.
  Workload& w = c.dense;
  w.desc = d;
  w.desc.is_varlen = 1;
  w.q = HostTensor({total_q, s.heads_q, hd}, dt);
  w.k = HostTensor({std::max<int64_t>(total_k, 1), s.heads_kv, hd}, dt);
  w.v = HostTensor({std::max<int64_t>(total_k, 1), s.heads_kv, hd}, dt);
  w.q.fill_normal(rng);
  w.k.fill_normal(rng);
  w.v.fill_normal(rng);
  w.out = HostTensor({total_q, s.heads_q, hd}, dt);
  w.lse = HostTensor({s.heads_q, total_q}, f32);
  w.cu_seqlens_q = HostTensor({batch + 1}, i32);
  w.cu_seqlens_k = HostTensor({batch + 1}, i32);
  std::copy(cu_q.begin(), cu_q.end(), w.cu_seqlens_q.data_as<int32_t>());
  std::copy(cu_k.begin(), cu_k.end(), w.cu_seqlens_k.data_as<int32_t>());
  if (s.sinks) {
    w.sinks = HostTensor({s.heads_q}, f32);
    w.sinks.fill_normal(rng);
  }
  w.total_q = total_q;
  if (total_k == 0) {  // every sequence empty: reference and kernels see k_len 0
    w.k.fill(0.0);
    w.v.fill(0.0);
  }

  // Paged call: pages assigned in shuffled order, -1 past the used ones, NaN spare pages.
  Workload& p = c.paged;
  p.desc = d;
  p.desc.is_paged = 1;
  p.desc.page_size = s.page_size;
  p.desc.is_varlen = s.varlen_q;
  int32_t used_pages = 0;
  for (int32_t b = 0; b < batch; ++b) used_pages += (s.k_lens[b] + s.page_size - 1) / s.page_size;
  const int32_t num_pages = used_pages + s.spare_pages;
  std::vector<int32_t> order(num_pages);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  c.max_pages = (max_k + s.page_size - 1) / s.page_size + 1;  // one -1 column at least
  c.pages_of.assign(size_t(batch) * c.max_pages, -1);
  p.k = HostTensor({num_pages, s.page_size, s.heads_kv, hd}, dt);
  p.v = HostTensor({num_pages, s.page_size, s.heads_kv, hd}, dt);
  p.k.fill_nan();
  p.v.fill_nan();
  int32_t next = 0;
  for (int32_t b = 0; b < batch; ++b) {
    for (int32_t t = 0; t < s.k_lens[b]; ++t) {
      if (t % s.page_size == 0) c.pages_of[size_t(b) * c.max_pages + t / s.page_size] = order[next++];
      const int64_t page = c.pages_of[size_t(b) * c.max_pages + t / s.page_size];
      for (int64_t e = 0; e < int64_t(s.heads_kv) * hd; ++e) {
        const int64_t dst = (page * s.page_size + t % s.page_size) * s.heads_kv * hd + e;
        const int64_t src = (cu_k[b] + t) * s.heads_kv * hd + e;
        p.k.set(dst, w.k.get(src));
        p.v.set(dst, w.v.get(src));
      }
    }
    // The rest of a partly used page stays NaN too: keys past seqused_k must never be read.
  }
  p.block_table = HostTensor({batch, c.max_pages}, i32);
  std::copy(c.pages_of.begin(), c.pages_of.end(), p.block_table.data_as<int32_t>());
  p.seqused_k = HostTensor({batch}, i32);
  std::copy(s.k_lens.begin(), s.k_lens.end(), p.seqused_k.data_as<int32_t>());
  p.sinks = w.sinks;
  p.total_q = total_q;
  if (s.varlen_q) {
    p.q = w.q;
    p.out = HostTensor({total_q, s.heads_q, hd}, dt);
    p.lse = HostTensor({s.heads_q, total_q}, f32);
    p.cu_seqlens_q = w.cu_seqlens_q;
  } else {
    p.q = HostTensor({batch, max_q, s.heads_q, hd}, dt);
    for (int64_t e = 0; e < p.q.numel(); ++e) p.q.set(e, w.q.get(e));  // equal lengths: same order
    p.out = HostTensor({batch, max_q, s.heads_q, hd}, dt);
    p.lse = HostTensor({batch, s.heads_q, max_q}, f32);
  }
  return c;
}

// The paged call's lse in the dense (varlen [heads, total_q]) order.
inline std::vector<double> lse_as_varlen(const PagedCase& c) {
  const Workload& p = c.paged;
  if (p.desc.is_varlen) return std::vector<double>(p.lse.data_as<float>(), p.lse.data_as<float>() + p.lse.numel());
  const int64_t b_n = p.desc.batch, h_n = p.desc.heads_q, s_n = p.desc.seqlen_q;
  std::vector<double> out(size_t(h_n * b_n * s_n));
  for (int64_t b = 0; b < b_n; ++b)
    for (int64_t h = 0; h < h_n; ++h)
      for (int64_t i = 0; i < s_n; ++i) out[size_t(h * b_n * s_n + b * s_n + i)] = p.lse.get((b * h_n + h) * s_n + i);
  return out;
}

// Max |a - b| over paired values, treating equal infinities as equal; NaN gives +inf.
inline double max_error(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (std::isinf(a[i]) && std::isinf(b[i]) && (a[i] > 0) == (b[i] > 0)) continue;
    const double e = std::abs(a[i] - b[i]);
    if (std::isnan(e)) return INFINITY;
    worst = std::max(worst, e);
  }
  return worst;
}

inline std::vector<double> values(const HostTensor& t) {
  std::vector<double> v(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = t.get(i);
  return v;
}

}  // namespace attnrt::test
