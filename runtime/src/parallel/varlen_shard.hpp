// A varlen ring's shard (context_parallel.hpp): the packed batch's sequences read from the
// caller's cu_seqlens, and the copies between the caller's shard layout and the ring's halves.
//
// Rank r's shard is, for each sequence i in order, its chunks chunks_of(r) (zigzag: r and
// 2N-1-r; contiguous: r) of c_i = len_i / num_chunks rows each, concatenated: sequence i holds
// shard rows [H cuc_i, H cuc_i + H c_i) (H chunks per rank, cuc = cumsum(c)), its chunk h at
// H cuc_i + h c_i. The ring works on halves instead: half h is chunk h of every sequence, packed
// (rows [cuc_i, cuc_i + c_i) of the half for sequence i), so that one varlen call with
// cu_seqlens = cumsum(c) on both sides computes a (query half, key half) pair of every sequence.
// Its buffers are [H, rows of a half, heads, dim] (an LSE [H, heads, rows]), each half compact.
#pragma once

#include "tensor_view.hpp"

#include <attnrt/plugin_abi.h>
#include <attnrt/runtime/parallel/block_ops.hpp>
#include <attnrt/runtime/parallel/ring_schedule.hpp>

#include <cstdint>
#include <vector>

namespace attnrt::cp {

struct VarlenShard {
  int halves = 1;                // chunks per rank: 2 (zigzag) or 1 (contiguous)
  std::vector<int64_t> seqlens;  // of the global packed batch, per sequence
  std::vector<int32_t> cu_half;  // [batch + 1]: cumsum(c_i), every block call's cu_seqlens_q and _k
  int64_t half_rows = 0;         // rows of one half: sum of c_i (total / num_chunks)
  int64_t shard_rows = 0;        // rows of the shard: halves * half_rows (total / N)
  // Shard rows [shard_row, shard_row + rows) are rows [half_row, half_row + rows) of half `half`;
  // in shard order, merged where both sides continue (contiguous layout: one segment).
  struct Segment {
    int64_t shard_row = 0, half = 0, half_row = 0, rows = 0;
  };
  std::vector<Segment> segments;
};

// Reads and checks the global cu_seqlens_q and cu_seqlens_k ([batch + 1] int32 prefix sums of the
// whole packed batch, in host memory) against desc and the split. Throws attnrt::Error:
// ATTNRT_ERROR_INVALID_ARGUMENT for a missing or malformed tensor, or a sequence whose length is
// not a multiple of the number of chunks (naming the sequence and its length);
// ATTNRT_ERROR_UNSUPPORTED when a sequence's query and key lengths differ.
VarlenShard varlen_shard(const attnrt_attention_desc& desc, const DLTensor* cu_seqlens_q, const DLTensor* cu_seqlens_k,
                         Layout layout, int world_size);

// Copies between the caller's shard layout (`shard`: [rows, heads, dim], or an LSE [heads, rows])
// and the ring's halves (`halves`: [H, rows of a half, heads, dim], or [H, heads, rows of a
// half]), converting dtypes as BlockOps::copy does: one copy per segment.
void shard_to_halves(BlockOps& ops, const VarlenShard& p, const DLTensor& shard, const TensorView& halves,
                     void* stream);
void halves_to_shard(BlockOps& ops, const VarlenShard& p, const TensorView& halves, const DLTensor& shard,
                     void* stream);

}  // namespace attnrt::cp
