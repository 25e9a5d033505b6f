// Ring Attention's forward (Liu et al. 2023, section 3): at step s a rank holds the K/V block of
// rank (rank - s) mod N. It posts the exchange that passes this block to the next rank and
// receives the following one from the previous rank, computes its queries against the block it
// holds (one plugin call per BlockCall of the plan, each into a partial out and LSE), merges the
// partials into float32 accumulators by their LSE (lse_merge.hpp), and waits for the exchange.
// The transfer of step s+1's block thus runs while step s computes (on CUDA: NCCL's stream
// beside the compute stream). The K/V block travels as one buffer, k then v.
#include "ring_setup.hpp"

#include <attnrt/runtime/error.hpp>

#include <array>
#include <cmath>

namespace attnrt::cp {

namespace {

// Sized, checked and run on one rank; any error aborts the group (RingAttention::forward).
void forward_rank(Backend& backend, Transport& transport, const RingOptions& options, BlockOps& o,
                  const attnrt_attention_desc& desc, const attnrt_forward_args& shard) {
  RingSetup s = ring_setup(desc, transport, options.layout, backend, false);
  read_cu_seqlens(s, desc, shard.cu_seqlens_q, shard.cu_seqlens_k);
  const std::string what = s.what();
  check_shard("q", shard.q, s.q_shape(), s.dtype, s.device, what);
  check_shard("k", shard.k, s.k_shape(), s.dtype, s.device, what);
  check_shard("v", shard.v, s.v_shape(), s.dtype, s.device, what);
  check_shard("out", shard.out, s.out_shape(), s.dtype, s.device, what);
  if (desc.return_lse) check_shard("lse", shard.lse, s.lse_shape(), dl_f32(), s.device, what);
  void* stream = options.stream;

  // Buffers in the ring's layout (ring_setup.hpp: the caller's, or varlen's halves): two K/V
  // blocks (the one computed on, the one arriving), the accumulators, and one partial out / LSE
  // that every call of a step writes into (its own rows); varlen: the queries' halves too.
  const int64_t rb = s.ring_batch(), rq = s.ring_q(), rk = s.ring_k();
  const size_t es = dtype_bytes(desc.dtype);
  const size_t k_bytes = static_cast<size_t>(rb * rk * s.heads_kv * s.head_dim) * es;
  const size_t v_bytes = static_cast<size_t>(rb * rk * s.heads_kv * s.head_dim_v) * es;
  const size_t out_elems = static_cast<size_t>(rb * rq * s.heads_q * s.head_dim_v);
  const size_t lse_elems = static_cast<size_t>(rb * s.heads_q * rq);
  const size_t kv_bytes = v_offset(k_bytes) + v_bytes;  // one buffer: k, then v
  std::array<std::shared_ptr<void>, 2> kv{o.allocate(kv_bytes, stream), o.allocate(kv_bytes, stream)};
  auto k_block = [&](int i) { return TensorView(kv[i].get(), s.dtype, s.device, {rb, rk, s.heads_kv, s.head_dim}); };
  auto v_block = [&](int i) {
    return TensorView(static_cast<char*>(kv[i].get()) + v_offset(k_bytes), s.dtype, s.device,
                      {rb, rk, s.heads_kv, s.head_dim_v});
  };
  const auto acc_out_mem = o.allocate(out_elems * 4, stream), acc_lse_mem = o.allocate(lse_elems * 4, stream);
  const auto part_out_mem = o.allocate(out_elems * es, stream), part_lse_mem = o.allocate(lse_elems * 4, stream);
  TensorView acc_out(acc_out_mem.get(), dl_f32(), s.device, {rb, rq, s.heads_q, s.head_dim_v});
  TensorView acc_lse(acc_lse_mem.get(), dl_f32(), s.device, {rb, s.heads_q, rq});
  const TensorView part_out(part_out_mem.get(), s.dtype, s.device, {rb, rq, s.heads_q, s.head_dim_v});
  std::shared_ptr<void> q_halves_mem;
  TensorView q(*shard.q);
  if (s.varlen) {
    q_halves_mem = o.allocate(static_cast<size_t>(rb * rq * s.heads_q * s.head_dim) * es, stream);
    q = TensorView(q_halves_mem.get(), s.dtype, s.device, {rb, rq, s.heads_q, s.head_dim});
    shard_to_halves(o, s.packed, *shard.q, q, stream);
  }
  const CallSeqlens cu = call_seqlens(s, o, stream);

  {
    TensorView k0 = k_block(0), v0 = v_block(0);
    if (s.varlen) {
      shard_to_halves(o, s.packed, *shard.k, k0, stream);
      shard_to_halves(o, s.packed, *shard.v, v0, stream);
    } else {
      o.copy(*shard.k, *k0, stream);
      o.copy(*shard.v, *v0, stream);
    }
    o.fill(*acc_out, 0.0f, stream);
    o.fill(*acc_lse, -INFINITY, stream);  // no key seen yet: the merge's identity
    int cur = 0;
    const int next = ring_next(s.rank, s.world_size), prev = ring_prev(s.rank, s.world_size);
    for (const RingStep& step : s.plan.steps) {
      std::unique_ptr<PendingExchange> pending;
      if (step.step + 1 < s.plan.num_steps) {
        const Transfer send{next, kv[cur].get(), kv_bytes}, receive{prev, kv[1 - cur].get(), kv_bytes};
        pending = transport.exchange({&send, 1}, {&receive, 1}, stream);
      }
      const TensorView k = k_block(cur), v = v_block(cur);
      for (const BlockCall& call : step.calls) {
        const TensorView qv = s.call_view(s.rows(q, call.q_begin, call.q_end)),
                         kv_k = s.call_view(s.rows(k, call.k_begin, call.k_end)),
                         kv_v = s.call_view(s.rows(v, call.k_begin, call.k_end));
        // The partial LSE compact ([batch, heads, rows] at the buffer's start), not a range of the
        // shard's rows: the CUDA plugins take only compact LSEs; the merge reads any strides.
        TensorView po = s.rows(part_out, call.q_begin, call.q_end), pl = s.call_lse(part_lse_mem.get(), call);
        TensorView po_call = s.call_view(po), pl_call = s.call_view(pl);
        attnrt_forward_args a{};
        a.struct_size = sizeof a;
        a.q = qv.dl();
        a.k = kv_k.dl();
        a.v = kv_v.dl();
        a.out = po_call.dl();
        a.lse = pl_call.dl();
        a.cu_seqlens_q = a.cu_seqlens_k = cu.get();
        backend.forward(call.desc, a, options.num_threads, stream);
        TensorView ao = s.rows(acc_out, call.q_begin, call.q_end), al = s.rows(acc_lse, call.q_begin, call.q_end);
        o.merge(*ao, *al, *po, *pl, stream);
      }
      if (pending) {
        pending->wait();
        cur = 1 - cur;
      }
    }
    if (s.varlen) {
      halves_to_shard(o, s.packed, acc_out, *shard.out, stream);
      if (desc.return_lse) halves_to_shard(o, s.packed, acc_lse, *shard.lse, stream);
    } else {
      DLTensor out = *shard.out;
      o.copy(*acc_out, out, stream);
      if (desc.return_lse) {
        DLTensor lse = *shard.lse;
        o.copy(*acc_lse, lse, stream);
      }
    }
  }
}

}  // namespace

void RingAttention::forward(const attnrt_attention_desc& desc, const attnrt_forward_args& shard) {
  abort_on_error(transport_, [&] { forward_rank(backend_, transport_, options_, ops(desc), desc, shard); });
}

}  // namespace attnrt::cp
