// sdpa on the CPU: FlashAttention-2's tiled online softmax (Dao 2023, Algorithms 1 and 2) with
// O(seqlen) extra memory per thread. The tile products run on oneDNN (sdpa_gemm.hpp), the online
// softmax in a build for the CPU's widest vector unit (online_softmax.hpp); the rest lives in
// translation units built for x86-64-v3 (AVX2, FMA, F16C), which the plugin calls only where the
// CPU has those.
#pragma once

#include <attnrt_kernels/problem.hpp>

#include <cstddef>

namespace attnrt::plugins::sdpa {

// Tile shape for one descriptor. A forward tile stacks `group` heads of `block_q` queries, so
// the K/V tile packed once serves every query head that shares it (GQA/MQA).
// Tile columns (keys, head_dim) are padded to a multiple of 16: the softmax's 16-lane builds and
// the score transform's 8-lane loops work on whole vectors.
inline constexpr int64_t kColumnMultiple = 16;
inline int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

// The largest bwd_q and bwd_k.
inline constexpr int64_t kMaxBackwardTile = 128;

struct Tiles {
  int64_t block_q;  // queries per head in a forward tile
  int64_t rows;     // rows of a forward tile: group * block_q
  int64_t block_k;  // keys per tile, a multiple of kColumnMultiple
  int64_t bwd_q;    // queries per backward tile
  int64_t bwd_k;    // keys per backward tile, a multiple of kColumnMultiple
  int64_t hd_pad;   // head_dim rounded up to kColumnMultiple
  int64_t hv_pad;   // head_dim_v rounded up to kColumnMultiple
};

Tiles tiles_for(const attnrt_attention_desc& desc);

// Workspace in floats: per thread, and shared by all threads (forward's packed K/V tiles,
// backward's row terms).
size_t forward_floats_per_thread(const attnrt_attention_desc& desc);
// `num_threads`: the call's; the forward's key splits (forward_splits) size part of it.
size_t forward_floats_shared(const attnrt_attention_desc& desc, int num_threads);
// The forward's packed key tiles and their states: where the key splits' part starts.
size_t forward_floats_tiles(const attnrt_attention_desc& desc);

// Split-KV for calls with fewer work items than threads (FlashDecoding's split of the keys, Dao
// et al. 2023: a decode step of one sequence has one item per kv head): each (sequence, kv head,
// query block) item's key tiles are divided among ceil(threads / items) units (at most
// kMaxForwardSplits, and at most the call's key tiles), which threads take as they take items, each
// writing its rows' partial m, l and unnormalized O; the last unit of an item to finish merges
// them in split order and writes the output. 1 (no split) where every thread has an item, on one
// thread, and for a deterministic call (the split count, and so the rounding, depends on the
// thread count; a call on a given count is bit-identical either way). Splitting calls with a
// few items a thread (two at 512 keys on 16 cores) cost bf16 calls 4-17% on the GPU machine's
// Xeon (bench/results/cpu-sdpa-split-2026-11-27/).
inline constexpr int64_t kMaxForwardSplits = 16;
// Floats of one split unit's partial state: o [rows, hv_pad], m and l [rows].
inline int64_t split_partial_floats(const Tiles& t) { return t.rows * (t.hv_pad + 2); }
int64_t forward_splits(const attnrt_attention_desc& desc, int num_threads);
// Upper bound of the forward's items: batch * ceil(seqlen_q / block_q) * heads_kv.
int64_t forward_items_bound(const attnrt_attention_desc& desc);
size_t backward_floats_per_thread(const attnrt_attention_desc& desc);
// Shared part of backward, for `total_q` packed query rows (batch * seqlen_q when padded), on
// `num_threads` threads (the per-head path's dq accumulators: backward_per_head).
size_t backward_floats_shared(const attnrt_attention_desc& desc, int64_t total_q, int num_threads);

// Whether a backward runs per (sequence, kv head): one thread takes every key block of the pair
// and adds each (query block, key block)'s ds k to fp32 dq rows it owns, five products a pair
// (FlashAttention-2's Algorithm 2, as PyTorch's CPU kernel parallelises it) against seven in the
// two passes (pass 1: s, dp, dv, dk; pass 2: s, dp again, dq). Taken where there are at least
// two pairs a thread (threads take them as they finish, which evens out pairs of different
// lengths) and the call is not deterministic: its sums run in another order than the two
// passes', so the result would depend on the thread count. The two passes spread a head's work
// over its key blocks and query blocks, which a call with fewer pairs needs.
bool backward_per_head(const attnrt_attention_desc& desc, int num_threads);
// Floats of one packed backward key tile: k^T, k and v^T.
size_t backward_tile_floats(const attnrt_attention_desc& desc);

// True where a call's products run in bf16 (bf16 inputs, and oneDNN has bf16 kernels for this
// CPU); its other calls convert to fp32.
bool uses_bf16_products(const attnrt_attention_desc& desc);

// Rows t0 .. t0+n of head h of sequence b copied as they are (bf16 bits) into dst [rows, dim],
// rows n .. rows zeroed, so the padded part of a fixed-shape product stays finite.
void copy_bf16_rows(const kernels::RowTensor& src, int64_t b, int64_t h, int64_t t0, int64_t n, int64_t dim,
                    uint16_t* dst, int64_t rows);

void forward(const kernels::ForwardProblem& p, float* workspace, int num_threads);
void backward(const kernels::BackwardProblem& p, float* workspace, int num_threads);

}  // namespace attnrt::plugins::sdpa
