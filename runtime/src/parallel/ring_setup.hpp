// What forward and backward share before the ring starts: the split, this rank's plan, the
// shards' expected shapes, and the refusals (raised before anything is sent).
#pragma once

#include "ring_checks.hpp"
#include "tensor_view.hpp"
#include "varlen_shard.hpp"

#include <attnrt/runtime/context_parallel.hpp>

#include <string>
#include <vector>

namespace attnrt::cp {

struct RingSetup {
  SequenceSplit split;  // varlen: the unit cut that classified the pairs (make_varlen_ring_plan)
  RingPlan plan;
  int rank = 0, world_size = 1;
  int64_t batch = 0, heads_q = 0, heads_kv = 0, head_dim = 0, head_dim_v = 0;
  int64_t shard_q = 0, shard_k = 0;  // rows of the caller's shards (varlen: packed, total / N)
  DLDataType dtype{};
  DLDevice device{};
  bool varlen = false;
  VarlenShard packed;  // varlen: the sequences and halves, once read_cu_seqlens has run

  // The caller's shards (context_parallel.hpp): [batch, rows, heads, dim] and [batch, heads, rows];
  // varlen: packed [rows, heads, dim] and [heads, rows].
  std::vector<int64_t> q_shape() const { return shape(shard_q, heads_q, head_dim); }
  std::vector<int64_t> k_shape() const { return shape(shard_k, heads_kv, head_dim); }
  std::vector<int64_t> v_shape() const { return shape(shard_k, heads_kv, head_dim_v); }
  std::vector<int64_t> out_shape() const { return shape(shard_q, heads_q, head_dim_v); }
  std::vector<int64_t> lse_shape() const {
    return varlen ? std::vector<int64_t>{heads_q, shard_q} : std::vector<int64_t>{batch, heads_q, shard_q};
  }

  // The ring's own buffers (blocks, partials, accumulators) are [ring_batch, ring rows, heads,
  // dim] (LSEs [ring_batch, heads, rows]): the caller's layout for a padded batch; varlen: the
  // halves, [halves, rows of a half, ...], each half compact (varlen_shard.hpp).
  int64_t ring_batch() const { return varlen ? packed.halves : batch; }
  int64_t ring_q() const { return varlen ? packed.half_rows : shard_q; }
  int64_t ring_k() const { return varlen ? packed.half_rows : shard_k; }
  // A call's rows [begin, end) of a ring buffer: a range of the sequence dimension, or varlen the
  // halves [begin, end) (dimension 0).
  TensorView rows(const TensorView& t, int64_t begin, int64_t end) const {
    return varlen ? t.slice(0, begin, end) : t.seq_rows(begin, end);
  }
  // What the plugin gets of such rows: varlen calls take one half as [rows, heads, dim] ([heads, rows]).
  TensorView call_view(const TensorView& t) const { return varlen ? t.without_dim0() : t; }
  // A call's compact partial LSE at `data`: [batch, heads, rows], varlen [1, heads, rows of a half].
  TensorView call_lse(void* data, const BlockCall& call) const {
    return varlen ? TensorView(data, {kDLFloat, 32, 1}, device, {1, heads_q, packed.half_rows})
                  : TensorView(data, {kDLFloat, 32, 1}, device, {batch, heads_q, call.q_end - call.q_begin});
  }

  // "rank 1's shard (global seqlen_q 256 over 4 ranks, zigzag)", for messages.
  std::string what() const;

 private:
  std::vector<int64_t> shape(int64_t rows, int64_t heads, int64_t dim) const {
    return varlen ? std::vector<int64_t>{rows, heads, dim} : std::vector<int64_t>{batch, rows, heads, dim};
  }
};

// Throws attnrt::Error: ATTNRT_ERROR_UNSUPPORTED with the reason for a refused descriptor or
// block, ATTNRT_ERROR_INVALID_ARGUMENT for a sequence the split cannot cut.
RingSetup ring_setup(const attnrt_attention_desc& desc, const Transport& transport, Layout layout,
                     const Backend& backend, bool backward);

// Varlen: reads the global cu_seqlens (varlen_shard) into s.packed and sizes the shards; nothing
// for a padded batch. Throws as varlen_shard does.
void read_cu_seqlens(RingSetup& s, const attnrt_attention_desc& desc, const DLTensor* cu_seqlens_q,
                     const DLTensor* cu_seqlens_k);

// Varlen: every block call's cu_seqlens (cumsum of the chunks), uploaded to the ring's device;
// empty for a padded batch. The tensor view points into `memory`.
struct CallSeqlens {
  std::shared_ptr<void> memory;
  TensorView cu;
  const DLTensor* get() const { return memory ? cu.dl() : nullptr; }
};
CallSeqlens call_seqlens(const RingSetup& s, BlockOps& ops, void* stream);

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
