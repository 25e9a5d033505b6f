// The ring schedule of context-parallel attention: how the global sequence is split among the
// ranks, which K/V block a rank holds at each ring step, and which (query chunk, key chunk)
// pairs of that step it computes, each as one plugin call with its own descriptor.
//
// Sources: Ring Attention (Liu, Zaharia, Abbeel 2023): the K/V blocks travel a ring of ranks while
// each rank keeps its query shard; Megatron-LM's context parallelism and zhuzilin's
// ring-flash-attention ("zigzag"): for causal attention the sequence is cut into 2N chunks and
// rank r holds chunks r and 2N-1-r, so that every rank has the same number of visible
// (query, key) pairs (a contiguous split gives the last rank N times the first rank's work).
//
// Conventions (plugin_abi.h): every sequence of the batch has seqlen_q queries and seqlen_k keys;
// query i sees key j unless
//   j > i + seqlen_k - seqlen_q + window_right   (causal: window_right 0)
//   j < i + seqlen_k - seqlen_q - window_left    (window_left >= 0)
// i.e. causal is aligned bottom-right. The schedule is the same on every rank and depends on the
// descriptor's shape fields only, so every rank can compute every other rank's plan (the
// backend's support query is asked about all of them before anything is sent).
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/runtime/export.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace attnrt::cp {

// How the global sequence is cut among world_size ranks.
enum class Layout {
  contiguous,  // rank r holds chunk r of N equal chunks (best for sliding windows: few steps)
  zigzag       // rank r holds chunks r and 2N-1-r of 2N equal chunks, in that order (causal balance)
};

ATTNRT_API const char* layout_name(Layout layout);

// The cut of one sequence: num_chunks() chunks of chunk_q queries and chunk_k keys each.
// A rank's shard is its chunks concatenated in the order of chunks_of(rank): shard row
// local * chunk_q + i is global query row chunks_of(rank)[local] * chunk_q + i (keys alike).
struct ATTNRT_API SequenceSplit {
  Layout layout = Layout::zigzag;
  int world_size = 1;
  int64_t seqlen_q = 0, seqlen_k = 0;  // global, per sequence
  int64_t chunk_q = 0, chunk_k = 0;

  // Throws attnrt::Error when seqlen_q or seqlen_k is not a multiple of the number of chunks
  // (N for contiguous, 2N for zigzag): the chunks must be equal for the load balance and for
  // shards of one shape on every rank (pad the sequence to a multiple, as Megatron-LM requires).
  SequenceSplit(Layout layout, int world_size, int64_t seqlen_q, int64_t seqlen_k);
  SequenceSplit() = default;  // one rank, empty sequence: a placeholder to assign to

  int chunks_per_rank() const { return layout == Layout::zigzag ? 2 : 1; }
  int num_chunks() const { return world_size * chunks_per_rank(); }
  int64_t shard_q() const { return chunk_q * chunks_per_rank(); }  // query rows per rank
  int64_t shard_k() const { return chunk_k * chunks_per_rank(); }  // key rows per rank
  std::vector<int> chunks_of(int rank) const;                      // global chunk indices, in shard order
};

// The mask of one (query chunk, key chunk) pair, in the global convention above, with the
// window made explicit: window_right = 0 for causal, -1 for unlimited.
struct ATTNRT_API PairMask {
  int64_t offset = 0;  // d = q_start - k_start + seqlen_k - seqlen_q: query i of the chunk sees key
                       // j of the chunk iff  i + d - window_left <= j <= i + d + window_right
  int32_t window_left = -1, window_right = -1;
};

enum class Visibility { none, full, partial };

// One plugin call of a ring step: query rows [q_begin, q_end) of the rank's shard against key
// rows [k_begin, k_end) of the K/V block it holds, computed with `desc` (the global descriptor
// with seqlen_q, seqlen_k, causal and window fields rewritten for the sub-block).
struct ATTNRT_API BlockCall {
  int q_chunk = 0, k_chunk = 0;  // global chunk indices (of the first pair, when fused)
  int64_t q_begin = 0, q_end = 0, k_begin = 0, k_end = 0;
  Visibility visibility = Visibility::full;
  attnrt_attention_desc desc{};
};

// What a rank does at step `step`: it holds the K/V block of rank `kv_owner` and runs `calls`.
struct ATTNRT_API RingStep {
  int step = 0;
  int kv_owner = 0;
  std::vector<BlockCall> calls;  // empty: nothing visible, the block only passes through
};

struct ATTNRT_API RingPlan {
  SequenceSplit split;
  int rank = 0;
  // Steps 0 .. num_steps-1 on every rank (the same count everywhere): step s holds the block of
  // rank (rank - s) mod N. Steps after the last one in which any rank sees any key are never
  // run, so with a sliding window the blocks no rank needs are neither computed nor sent.
  int num_steps = 1;
  std::vector<RingStep> steps;
  int64_t visible_pairs = 0;  // (query, key) pairs this rank computes, per sequence and head
};

// The visibility of query chunk `q_chunk` against key chunk `k_chunk` under desc's mask.
ATTNRT_API PairMask pair_mask(const attnrt_attention_desc& desc, const SequenceSplit& split, int q_chunk, int k_chunk);
ATTNRT_API Visibility classify(const PairMask& mask, int64_t chunk_q, int64_t chunk_k);
// Visible (query, key) pairs of a chunk pair, by the formula above (for load balance).
ATTNRT_API int64_t visible_pairs(const PairMask& mask, int64_t chunk_q, int64_t chunk_k);

// The sub-block and descriptor that compute a partially visible pair exactly: rows of queries
// and keys with nothing visible are cut off, and the window fields are rewritten for the
// sub-block's bottom-right alignment (the derivation is in ring_schedule.cpp). Returns false
// when nothing is visible. `call.q_begin/q_end/k_begin/k_end` are relative to the chunks.
ATTNRT_API bool block_call(const attnrt_attention_desc& global, const PairMask& mask, int64_t chunk_q, int64_t chunk_k,
                           BlockCall& call);

// The whole plan of `rank`. desc is the global descriptor (seqlen_q, seqlen_k of the whole
// sequence). Fully visible pairs that share their query chunks or their key chunks are fused
// into one call (as ring-flash-attention's zigzag does), so a causal zigzag step is one call
// after the first (three: two diagonals and a full pair); a block fully visible to the whole shard is
// one call too.
ATTNRT_API RingPlan make_ring_plan(const attnrt_attention_desc& desc, const SequenceSplit& split, int rank);

// Varlen (desc.is_varlen: a packed batch of sequences of different lengths, each cut into
// num_chunks equal chunks of its own). "" or why the ring cannot run desc as varlen: a sliding
// window, or desc.seqlen_q != desc.seqlen_k (packed self-attention only). "" for a padded batch.
ATTNRT_API std::string varlen_refusal(const attnrt_attention_desc& desc);

// The plan of `rank` for a varlen desc, in halves: a shard's half h is chunk chunks_of(rank)[h]
// of every sequence, packed (context_parallel.hpp), and a call's q_begin / q_end (k_begin /
// k_end) are half indices, [h, h + 1): one varlen call per visible (query half, key half) pair,
// unfused, with desc's fields (batch, cu_seqlens) and seqlen_q = seqlen_k = the largest chunk
// (ceil(desc.seqlen_q / num_chunks)), causal on the diagonal pairs. plan.split is the cut of a
// sequence of 2 rows per chunk that classified the pairs, and visible_pairs counts its pairs.
// Throws ATTNRT_ERROR_UNSUPPORTED with varlen_refusal's reason.
ATTNRT_API RingPlan make_varlen_ring_plan(const attnrt_attention_desc& desc, Layout layout, int world_size, int rank);

}  // namespace attnrt::cp
