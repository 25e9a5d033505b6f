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

}  // namespace attnrt::test
