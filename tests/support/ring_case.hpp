// Context-parallel tests' helpers: cutting a whole-sequence workload into the shards of a split,
// running every rank of a ring as a thread of this process (InProcessGroup), and putting the
// shards' results back in whole-sequence order for comparison.
#pragma once

#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/context_parallel.hpp>
#include <attnrt/runtime/parallel/in_process_transport.hpp>

#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace attnrt::test {

// Global sequence row of each shard row of `rank` (chunks in shard order).
inline std::vector<int64_t> global_rows(const cp::SequenceSplit& split, int rank, bool keys) {
  const int64_t chunk = keys ? split.chunk_k : split.chunk_q;
  std::vector<int64_t> rows;
  for (int c : split.chunks_of(rank)) {
    for (int64_t i = 0; i < chunk; ++i) rows.push_back(c * chunk + i);
  }
  return rows;
}

// Rows `rows` (dimension 1) of a compact [batch, seqlen, heads, dim] tensor, as a compact tensor.
inline HostTensor take_rows(const HostTensor& t, const std::vector<int64_t>& rows) {
  const auto& s = t.shape();
  HostTensor r({s[0], static_cast<int64_t>(rows.size()), s[2], s[3]}, t.dtype());
  const size_t row_bytes = static_cast<size_t>(s[2] * s[3]) * (t.dtype().bits / 8);
  for (int64_t b = 0; b < s[0]; ++b) {
    for (size_t i = 0; i < rows.size(); ++i) {
      std::memcpy(
          static_cast<char*>(r.data()) + (b * static_cast<int64_t>(rows.size()) + static_cast<int64_t>(i)) * row_bytes,
          static_cast<const char*>(t.data()) + (b * s[1] + rows[i]) * row_bytes, row_bytes);
    }
  }
  return r;
}

// Writes a shard's [batch, rows, heads, dim] values into a whole-sequence [batch, seqlen, heads,
// dim] vector (row-major), or an LSE's [batch, heads, rows] into [batch, heads, seqlen].
inline void put_rows(const HostTensor& shard, const std::vector<int64_t>& rows, int64_t seqlen,
                     std::vector<double>& global) {
  const auto& s = shard.shape();
  const int64_t n = static_cast<int64_t>(rows.size());
  if (s.size() == 4) {
    const int64_t row = s[2] * s[3];
    global.resize(static_cast<size_t>(s[0] * seqlen * row));
    for (int64_t b = 0; b < s[0]; ++b)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t e = 0; e < row; ++e) global[(b * seqlen + rows[i]) * row + e] = shard.get((b * n + i) * row + e);
  } else {
    global.resize(static_cast<size_t>(s[0] * s[1] * seqlen));
    for (int64_t bh = 0; bh < s[0] * s[1]; ++bh)
      for (int64_t i = 0; i < n; ++i) global[bh * seqlen + rows[i]] = shard.get(bh * n + i);
  }
}

inline std::vector<double> values(const HostTensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.get(i);
  return v;
}

// What a ring computed, in whole-sequence order, and what it sent.
struct RingResult {
  std::vector<double> out, lse, dq, dk, dv;
  size_t bytes_sent = 0, messages_sent = 0;
};

// Runs forward then backward of w (global descriptor w.desc, CPU) on `world` ranks, each rank a
// thread with one CPU thread per plugin call. Outputs start as NaN, so a row the ring never
// writes fails every comparison. Rethrows the first rank's error (after joining them all).
inline RingResult run_ring(Backend& backend, Workload& w, int world, cp::Layout layout, bool backward = true) {
  const cp::SequenceSplit split(layout, world, w.desc.seqlen_q, w.desc.seqlen_k);
  cp::InProcessGroup group(world, std::chrono::seconds(30));
  struct Rank {
    std::vector<int64_t> q_rows, k_rows;
    HostTensor q, k, v, dout, out, lse, dq, dk, dv;
    std::exception_ptr error;
  };
  std::vector<Rank> ranks(world);
  for (int r = 0; r < world; ++r) {
    Rank& x = ranks[r];
    x.q_rows = global_rows(split, r, false);
    x.k_rows = global_rows(split, r, true);
    x.q = take_rows(w.q, x.q_rows);
    x.k = take_rows(w.k, x.k_rows);
    x.v = take_rows(w.v, x.k_rows);
    x.dout = take_rows(w.dout, x.q_rows);
    x.out = take_rows(w.out, x.q_rows);
    x.out.fill_nan();
    x.lse = HostTensor({w.desc.batch, w.desc.heads_q, split.shard_q()}, dl_float32());
    x.lse.fill_nan();
    x.dq = x.q, x.dk = x.k, x.dv = x.v;
    x.dq.fill_nan();
    x.dk.fill_nan();
    x.dv.fill_nan();
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      Rank& x = ranks[r];
      try {
        cp::RingAttention ring(backend, group.transport(r), {layout, 1, nullptr, nullptr});
        attnrt_forward_args fa{};
        fa.struct_size = sizeof fa;
        fa.q = x.q.dl();
        fa.k = x.k.dl();
        fa.v = x.v.dl();
        fa.out = x.out.dl();
        fa.lse = x.lse.dl();
        ring.forward(w.desc, fa);
        if (!backward) return;
        attnrt_backward_args ba{};
        ba.struct_size = sizeof ba;
        ba.dout = x.dout.dl();
        ba.q = x.q.dl();
        ba.k = x.k.dl();
        ba.v = x.v.dl();
        ba.out = x.out.dl();
        ba.lse = x.lse.dl();
        ba.dq = x.dq.dl();
        ba.dk = x.dk.dl();
        ba.dv = x.dv.dl();
        ring.backward(w.desc, ba);
      } catch (...) {
        x.error = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const Rank& x : ranks) {
    if (x.error) std::rethrow_exception(x.error);
  }
  RingResult res;
  for (const Rank& x : ranks) {
    put_rows(x.out, x.q_rows, w.desc.seqlen_q, res.out);
    put_rows(x.lse, x.q_rows, w.desc.seqlen_q, res.lse);
    if (!backward) continue;
    put_rows(x.dq, x.q_rows, w.desc.seqlen_q, res.dq);
    put_rows(x.dk, x.k_rows, w.desc.seqlen_k, res.dk);
    put_rows(x.dv, x.k_rows, w.desc.seqlen_k, res.dv);
  }
  res.bytes_sent = group.bytes_sent();
  res.messages_sent = group.messages_sent();
  return res;
}

// Varlen: the packed rows (of the whole batch) that `rank`'s shard holds, in shard order: for each
// sequence in order its chunks chunks_of(rank) of len_i / num_chunks rows (context_parallel.hpp).
inline std::vector<int64_t> varlen_global_rows(const std::vector<int64_t>& cu_seqlens, cp::Layout layout, int world,
                                               int rank) {
  const int chunks = world * (layout == cp::Layout::zigzag ? 2 : 1);
  const std::vector<int> mine =
      layout == cp::Layout::zigzag ? std::vector<int>{rank, 2 * world - 1 - rank} : std::vector<int>{rank};
  std::vector<int64_t> rows;
  for (size_t i = 0; i + 1 < cu_seqlens.size(); ++i) {
    const int64_t c = (cu_seqlens[i + 1] - cu_seqlens[i]) / chunks;
    for (int ch : mine) {
      for (int64_t j = 0; j < c; ++j) rows.push_back(cu_seqlens[i] + ch * c + j);
    }
  }
  return rows;
}

// Rows `rows` (dimension 0) of a compact packed [total, heads, dim] tensor, as a compact tensor.
inline HostTensor take_packed_rows(const HostTensor& t, const std::vector<int64_t>& rows) {
  const auto& s = t.shape();
  HostTensor r({static_cast<int64_t>(rows.size()), s[1], s[2]}, t.dtype());
  const size_t row_bytes = static_cast<size_t>(s[1] * s[2]) * (t.dtype().bits / 8);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(static_cast<char*>(r.data()) + i * row_bytes, static_cast<const char*>(t.data()) + rows[i] * row_bytes,
                row_bytes);
  }
  return r;
}

// Writes a packed shard's [rows, heads, dim] values into a whole-batch [total, heads, dim] vector,
// or an LSE's [heads, rows] into [heads, total].
inline void put_packed_rows(const HostTensor& shard, const std::vector<int64_t>& rows, int64_t total,
                            std::vector<double>& global) {
  const auto& s = shard.shape();
  const int64_t n = static_cast<int64_t>(rows.size());
  if (s.size() == 3) {
    const int64_t row = s[1] * s[2];
    global.resize(static_cast<size_t>(total * row));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t e = 0; e < row; ++e) global[rows[i] * row + e] = shard.get(i * row + e);
  } else {
    global.resize(static_cast<size_t>(s[0] * total));
    for (int64_t h = 0; h < s[0]; ++h)
      for (int64_t i = 0; i < n; ++i) global[h * total + rows[i]] = shard.get(h * n + i);
  }
}

// run_ring for a varlen workload (w.desc.is_varlen: packed q, k, v with w.cu_seqlens_q/_k): every
// rank passes the whole batch's cu_seqlens (host memory) with its packed shard. `rows_of(rank)`
// cuts the shards and puts the results back (default: varlen_global_rows of `layout`), so a test
// can give the ring shards cut another way.
inline RingResult run_varlen_ring(Backend& backend, Workload& w, int world, cp::Layout layout, bool backward = true,
                                  std::function<std::vector<int64_t>(int)> rows_of = {}) {
  std::vector<int64_t> cu;
  for (int64_t i = 0; i < w.cu_seqlens_q.numel(); ++i) cu.push_back(static_cast<int64_t>(w.cu_seqlens_q.get(i)));
  if (!rows_of) rows_of = [&](int r) { return varlen_global_rows(cu, layout, world, r); };
  const int64_t total = cu.back();
  cp::InProcessGroup group(world, std::chrono::seconds(30));
  struct Rank {
    std::vector<int64_t> rows;
    HostTensor q, k, v, dout, out, lse, dq, dk, dv;
    std::exception_ptr error;
  };
  std::vector<Rank> ranks(world);
  for (int r = 0; r < world; ++r) {
    Rank& x = ranks[r];
    x.rows = rows_of(r);
    x.q = take_packed_rows(w.q, x.rows);
    x.k = take_packed_rows(w.k, x.rows);
    x.v = take_packed_rows(w.v, x.rows);
    x.dout = take_packed_rows(w.dout, x.rows);
    x.out = take_packed_rows(w.out, x.rows);
    x.out.fill_nan();
    x.lse = HostTensor({w.desc.heads_q, static_cast<int64_t>(x.rows.size())}, dl_float32());
    x.lse.fill_nan();
    x.dq = x.q, x.dk = x.k, x.dv = x.v;
    x.dq.fill_nan();
    x.dk.fill_nan();
    x.dv.fill_nan();
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      Rank& x = ranks[r];
      try {
        cp::RingAttention ring(backend, group.transport(r), {layout, 1, nullptr, nullptr});
        attnrt_forward_args fa{};
        fa.struct_size = sizeof fa;
        fa.q = x.q.dl(), fa.k = x.k.dl(), fa.v = x.v.dl(), fa.out = x.out.dl(), fa.lse = x.lse.dl();
        fa.cu_seqlens_q = w.cu_seqlens_q.dl(), fa.cu_seqlens_k = w.cu_seqlens_k.dl();
        ring.forward(w.desc, fa);
        if (!backward) return;
        attnrt_backward_args ba{};
        ba.struct_size = sizeof ba;
        ba.dout = x.dout.dl(), ba.q = x.q.dl(), ba.k = x.k.dl(), ba.v = x.v.dl(), ba.out = x.out.dl();
        ba.lse = x.lse.dl(), ba.dq = x.dq.dl(), ba.dk = x.dk.dl(), ba.dv = x.dv.dl();
        ba.cu_seqlens_q = w.cu_seqlens_q.dl(), ba.cu_seqlens_k = w.cu_seqlens_k.dl();
        ring.backward(w.desc, ba);
      } catch (...) {
        x.error = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const Rank& x : ranks) {
    if (x.error) std::rethrow_exception(x.error);
  }
  RingResult res;
  for (const Rank& x : ranks) {
    put_packed_rows(x.out, x.rows, total, res.out);
    put_packed_rows(x.lse, x.rows, total, res.lse);
    if (!backward) continue;
    put_packed_rows(x.dq, x.rows, total, res.dq);
    put_packed_rows(x.dk, x.rows, total, res.dk);
    put_packed_rows(x.dv, x.rows, total, res.dv);
  }
  res.bytes_sent = group.bytes_sent();
  res.messages_sent = group.messages_sent();
  return res;
}

}  // namespace attnrt::test
