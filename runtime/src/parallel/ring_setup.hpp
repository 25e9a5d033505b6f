// What forward and backward share before the ring starts: the split, this rank's plan, the
// shards' expected shapes, and the refusals (raised before anything is sent).
#pragma once

#include "ring_checks.hpp"
#include "tensor_view.hpp"

#include <attnrt/runtime/context_parallel.hpp>

#include <string>
#include <vector>

namespace attnrt::cp {

struct RingSetup {
  SequenceSplit split;
  RingPlan plan;
  int rank = 0, world_size = 1;
  int64_t batch = 0, heads_q = 0, heads_kv = 0, head_dim = 0, head_dim_v = 0;
  int64_t shard_q = 0, shard_k = 0;
  DLDataType dtype{};
  DLDevice device{};

  std::vector<int64_t> q_shape() const { return {batch, shard_q, heads_q, head_dim}; }
  std::vector<int64_t> k_shape() const { return {batch, shard_k, heads_kv, head_dim}; }
  std::vector<int64_t> v_shape() const { return {batch, shard_k, heads_kv, head_dim_v}; }
  std::vector<int64_t> out_shape() const { return {batch, shard_q, heads_q, head_dim_v}; }
  std::vector<int64_t> lse_shape() const { return {batch, heads_q, shard_q}; }
  // "rank 1's shard (global seqlen_q 256 over 4 ranks, zigzag)", for messages.
  std::string what() const;
};

// Throws attnrt::Error: ATTNRT_ERROR_UNSUPPORTED with the reason for a refused descriptor or
// block, ATTNRT_ERROR_INVALID_ARGUMENT for a sequence the split cannot cut.
RingSetup ring_setup(const attnrt_attention_desc& desc, const Transport& transport, Layout layout,
                     const Backend& backend, bool backward);

// Runs `body`; if it throws, aborts the group (so the other ranks stop waiting) and rethrows.
template <class Body>
void abort_on_error(Transport& transport, Body body) {
  try {
    body();
  } catch (const std::exception& e) {
    transport.abort(e.what());
    throw;
  }
}

}  // namespace attnrt::cp
