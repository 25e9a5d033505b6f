// Context parallelism: attention over a sequence split across ranks (issue 20). Each rank holds
// a shard of q, k and v; the K/V blocks travel a ring of ranks while each rank computes its
// queries against the block it holds with whichever backend its site resolved to, and merges
// the partial results exactly by their log-sum-exp. Backward: dQ accumulates where the queries
// are; the dK/dV accumulators travel the ring with their K/V blocks and arrive back at their
// owner. Nothing here is a kernel: every attention call goes through Backend, every transfer
// through a Transport, every other tensor operation through BlockOps.
//
// Sources: Ring Attention with Blockwise Transformers (Liu, Zaharia, Abbeel 2023), forward and
// backward; Megatron-LM's context parallelism and ring-flash-attention (zhuzilin) for the zigzag
// causal split; FlashAttention-2 (Dao 2023), Algorithm 2, for why a block's backward with the
// global out and LSE gives that block's exact share of the gradients: p_ij = exp(s_ij - lse_i)
// and D_i = dout_i . out_i are properties of the whole row, which the global lse and out carry.
// Design, transports and the multi-host plan: docs/distributed.md.
//
// What a rank passes (global sequence S_q, S_k over N ranks; shard_q = S_q / N, shard_k = S_k / N):
//   desc   the global descriptor: what a single-device call on the whole sequence would take
//          (seqlen_q = S_q, seqlen_k = S_k, causal / window fields in global positions)
//   q      [batch, shard_q, heads_q,  head_dim]     this rank's queries, in layout order:
//          zigzag: global chunks r and 2N-1-r of 2N, concatenated; contiguous: chunk r of N
//   k, v   [batch, shard_k, heads_kv, head_dim(_v)] this rank's keys and values, the same cut
//   out    [batch, shard_q, heads_q,  head_dim_v]   written: the rows of the whole-sequence out
//   lse    [batch, heads_q, shard_q] float32        written when desc.return_lse (backward needs it)
// dtypes as the ABI says (q, k, v, out in desc.dtype); any strides with a contiguous last
// dimension. Backward takes dout and the forward's out and lse like out and lse, and writes dq,
// dk, dv shaped like q, k, v: the shard's rows of the whole-sequence gradients.
//
// Varlen (desc.is_varlen: a packed batch of B sequences, self-attention): desc is the global
// call's (batch B, seqlen_q = seqlen_k = the largest length), and the args carry the global call's
// cu_seqlens_q and cu_seqlens_k ([B + 1] int32 prefix sums of the whole batch, equal, in host
// memory: kDLCPU or kDLCUDAHost), the same on every rank. Every sequence length len_i must be a
// multiple of the number of chunks (2N zigzag, N contiguous; else INVALID_ARGUMENT naming the
// sequence and its length: pad each sequence, as Megatron-LM requires). Each sequence is cut into
// chunks of c_i = len_i / (2N or N) rows, and rank r's shard is, for each sequence in order, its
// chunks r and 2N-1-r (zigzag; contiguous: chunk r), concatenated: Megatron-LM's and
// ring-flash-attention's varlen zigzag. So
//   q      [total / N, heads_q, head_dim]  (k, v, out, dout, dq, dk, dv alike, packed)
//   lse    [heads_q, total / N] float32   (the ABI's varlen LSE)
// and the shard's own cu_seqlens would be cumsum(len_i / N). Inside, the ring repacks the shard
// into halves (half h: chunk h of every sequence, packed), so that each visible (query half, key
// half) pair is one varlen call with cu_seqlens = cumsum(c_i) on both sides (the mask of a chunk
// pair is the same for every sequence); K/V blocks and dK/dV accumulators travel in halves, and
// the results are copied back into the caller's layout at the end (docs/distributed.md).
//
// Supported: batch >= 1, GQA / MQA (heads_q a multiple of heads_kv), causal or not, sliding
// window (window_left / window_right; blocks outside it are skipped, and ring steps that no rank
// needs are neither computed nor sent), softcap, head_dim_v != head_dim, deterministic (the ring
// order is fixed), varlen as above when the backend takes varlen calls. Refused with
// ATTNRT_ERROR_UNSUPPORTED: varlen with a sliding window (the cut of a chunk pair by a window
// depends on each sequence's chunk length) or with different query and key lengths (max_seqlen
// or any sequence), paged KV, sinks and ALiBi (not yet written for merged blocks), dropout,
// extension blocks (flex_attention). A sequence length that is not a multiple of the number of
// chunks is ATTNRT_ERROR_INVALID_ARGUMENT (pad it). Every rank must make the same calls with the
// same global descriptor: the schedule is computed, not negotiated.
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/export.hpp>
#include <attnrt/runtime/parallel/block_ops.hpp>
#include <attnrt/runtime/parallel/ring_schedule.hpp>
#include <attnrt/runtime/parallel/transport.hpp>

#include <memory>
#include <string>

namespace attnrt::cp {

struct RingOptions {
  Layout layout = Layout::zigzag;
  int num_threads = 0;      // CPU threads per plugin call (0: the plugin's default)
  void* stream = nullptr;   // CUDA: the compute stream (cudaStream_t); CPU: unused
  BlockOps* ops = nullptr;  // NULL: host_block_ops() for kDLCPU, cuda_block_ops(device) for kDLCUDA
};

// Ring attention on one rank of `transport`'s group. The backend and the transport are borrowed:
// they must outlive the object. Calls on one RingAttention must not overlap; every rank of the
// group makes the same calls in the same order.
class ATTNRT_API RingAttention {
 public:
  RingAttention(Backend& backend, Transport& transport, RingOptions options = {});
  ~RingAttention();
  RingAttention(const RingAttention&) = delete;
  RingAttention& operator=(const RingAttention&) = delete;

  // Why this ring cannot compute `desc` ("" if it can): the refusals above, then the backend's
  // own answer for every block descriptor of every rank's plan (checked before anything is sent,
  // so all ranks refuse alike), and for backward whether the backend has one.
  std::string unsupported_reason(const attnrt_attention_desc& desc, bool backward = false) const;

  // This rank's plan for `desc` (ring_schedule.hpp). Throws as SequenceSplit does.
  RingPlan plan(const attnrt_attention_desc& desc) const;

  // Forward on this rank's shard (the header's comment says the shapes). Throws attnrt::Error:
  // a malformed shard names the tensor and both shapes; an unsupported desc carries the reason;
  // a failure mid-ring aborts the group so the other ranks throw too instead of waiting.
  void forward(const attnrt_attention_desc& desc, const attnrt_forward_args& shard);
  // Backward on this rank's shard: shard.out and shard.lse are what forward wrote.
  void backward(const attnrt_attention_desc& desc, const attnrt_backward_args& shard);

 private:
  BlockOps& ops(const attnrt_attention_desc& desc);

  Backend& backend_;
  Transport& transport_;
  RingOptions options_;
  std::unique_ptr<BlockOps> owned_ops_;
};

}  // namespace attnrt::cp
