// Ring Attention's backward (Liu et al. 2023, section 3; ring-flash-attention's
// ring_flash_attn_backward): the K/V blocks travel the ring as in forward, and with each block
// travels the float32 accumulator of its dK and dV. At step s a rank runs the plugin's backward of
// its queries against the block it holds, with the forward's global out and LSE (so that
// p_ij = exp(s_ij - lse_i) and D_i = dout_i . out_i are the whole row's: FlashAttention-2,
// Algorithm 2), adds the partial dQ into its own accumulator and the partial dK, dV into the
// travelling one, and passes that on. After the last step each accumulator is one hop (a full
// ring) or a few hops (a ring cut short by a sliding window) from its owner, and is sent there.
//
// Overlap: step s's K/V exchange is posted before its compute and waited after it, as in
// forward; the dK/dV accumulator of step s is posted after step s's compute and waited inside
// step s+1 just before its first add, so it too moves while the next block's backward runs.
#include "ring_setup.hpp"

#include <attnrt/runtime/error.hpp>

#include <array>

namespace attnrt::cp {

namespace {

// Sized, checked and run on one rank; any error aborts the group (RingAttention::backward).
void backward_rank(Backend& backend, Transport& transport, const RingOptions& options, BlockOps& o,
                   const attnrt_attention_desc& desc, const attnrt_backward_args& shard) {
  RingSetup s = ring_setup(desc, transport, options.layout, backend, true);
  read_cu_seqlens(s, desc, shard.cu_seqlens_q, shard.cu_seqlens_k);
  const std::string what = s.what();
  check_shard("dout", shard.dout, s.out_shape(), s.dtype, s.device, what);
  check_shard("q", shard.q, s.q_shape(), s.dtype, s.device, what);
  check_shard("k", shard.k, s.k_shape(), s.dtype, s.device, what);
  check_shard("v", shard.v, s.v_shape(), s.dtype, s.device, what);
  check_shard("out", shard.out, s.out_shape(), s.dtype, s.device, what);
  check_shard("lse", shard.lse, s.lse_shape(), dl_f32(), s.device, what);
  check_shard("dq", shard.dq, s.q_shape(), s.dtype, s.device, what);
  check_shard("dk", shard.dk, s.k_shape(), s.dtype, s.device, what);
  check_shard("dv", shard.dv, s.v_shape(), s.dtype, s.device, what);
  void* stream = options.stream;

  // Buffers in the ring's layout (ring_setup.hpp: the caller's, or varlen's halves).
  const int64_t rb = s.ring_batch(), rq = s.ring_q(), rk = s.ring_k();
  const size_t es = dtype_bytes(desc.dtype);
  const int64_t k_elems = rb * rk * s.heads_kv * s.head_dim;
  const int64_t v_elems = rb * rk * s.heads_kv * s.head_dim_v;
  // One buffer each: k (or dk) then v (or dv) at v_offset; blocks in the dtype, accumulators fp32.
  const size_t kv_bytes = v_offset(static_cast<size_t>(k_elems) * es) + static_cast<size_t>(v_elems) * es;
  const size_t dkv_bytes = v_offset(static_cast<size_t>(k_elems) * 4) + static_cast<size_t>(v_elems) * 4;
  // A K/V-shaped pair of tensors (k then v) in one buffer of `dtype`: a block, or an accumulator.
  auto pair_of = [&](void* base, DLDataType dtype) {
    const size_t bytes = v_offset((dtype.bits / 8) * static_cast<size_t>(k_elems));
    return std::array<TensorView, 2>{
        TensorView(base, dtype, s.device, {rb, rk, s.heads_kv, s.head_dim}),
        TensorView(static_cast<char*>(base) + bytes, dtype, s.device, {rb, rk, s.heads_kv, s.head_dim_v})};
  };
  const size_t q_elems = static_cast<size_t>(rb * rq * s.heads_q * s.head_dim);
  const size_t out_elems = static_cast<size_t>(rb * rq * s.heads_q * s.head_dim_v);
  std::array<std::shared_ptr<void>, 2> kv{o.allocate(kv_bytes, stream), o.allocate(kv_bytes, stream)};
  std::array<std::shared_ptr<void>, 2> dkv{o.allocate(dkv_bytes, stream), o.allocate(dkv_bytes, stream)};
  const auto part_kv_mem = o.allocate(kv_bytes, stream);
  const auto dq_acc_mem = o.allocate(q_elems * 4, stream);
  const auto lse_rows_mem = o.allocate(static_cast<size_t>(rb * s.heads_q * rq) * 4, stream);
  const auto part_dq_mem = o.allocate(q_elems * es, stream);
  TensorView dq_acc(dq_acc_mem.get(), dl_f32(), s.device, {rb, rq, s.heads_q, s.head_dim});
  const TensorView part_dq(part_dq_mem.get(), s.dtype, s.device, {rb, rq, s.heads_q, s.head_dim});
  const auto part_kv = pair_of(part_kv_mem.get(), s.dtype);
  TensorView q(*shard.q), dout(*shard.dout), out(*shard.out), lse(*shard.lse);
  std::shared_ptr<void> halves_mem;  // varlen: q, dout, out and lse in halves, one buffer
  if (s.varlen) {
    const size_t qb = v_offset(q_elems * es), ob = v_offset(out_elems * es);
    halves_mem = o.allocate(qb + 2 * ob + static_cast<size_t>(rb * s.heads_q * rq) * 4, stream);
    char* base = static_cast<char*>(halves_mem.get());
    q = TensorView(base, s.dtype, s.device, {rb, rq, s.heads_q, s.head_dim});
    dout = TensorView(base + qb, s.dtype, s.device, {rb, rq, s.heads_q, s.head_dim_v});
    out = TensorView(base + qb + ob, s.dtype, s.device, {rb, rq, s.heads_q, s.head_dim_v});
    lse = TensorView(base + qb + 2 * ob, dl_f32(), s.device, {rb, s.heads_q, rq});
    shard_to_halves(o, s.packed, *shard.q, q, stream);
    shard_to_halves(o, s.packed, *shard.dout, dout, stream);
    shard_to_halves(o, s.packed, *shard.out, out, stream);
    shard_to_halves(o, s.packed, *shard.lse, lse, stream);
  }
  const CallSeqlens cu = call_seqlens(s, o, stream);

  {
    {
      auto own = pair_of(kv[0].get(), s.dtype);
      auto acc = pair_of(dkv[0].get(), dl_f32());
      if (s.varlen) {
        shard_to_halves(o, s.packed, *shard.k, own[0], stream);
        shard_to_halves(o, s.packed, *shard.v, own[1], stream);
      } else {
        o.copy(*shard.k, *own[0], stream);
        o.copy(*shard.v, *own[1], stream);
      }
      o.fill(*acc[0], 0.0f, stream);
      o.fill(*acc[1], 0.0f, stream);
      o.fill(*dq_acc, 0.0f, stream);
    }
    int cur = 0, cur_acc = 0;
    std::unique_ptr<PendingExchange> pending_acc;  // the accumulator arriving for this step's block
    const int next = ring_next(s.rank, s.world_size), prev = ring_prev(s.rank, s.world_size);
    for (const RingStep& step : s.plan.steps) {
      const bool more = step.step + 1 < s.plan.num_steps;
      std::unique_ptr<PendingExchange> pending_kv;
      if (more) {
        const Transfer send{next, kv[cur].get(), kv_bytes}, receive{prev, kv[1 - cur].get(), kv_bytes};
        pending_kv = transport.exchange({&send, 1}, {&receive, 1}, stream);
      }
      const auto block = pair_of(kv[cur].get(), s.dtype);
      for (const BlockCall& call : step.calls) {
        const int64_t qb = call.q_begin, qe = call.q_end, kb = call.k_begin, ke = call.k_end;
        TensorView qv = s.call_view(s.rows(q, qb, qe)), dov = s.call_view(s.rows(dout, qb, qe)),
                   ov = s.call_view(s.rows(out, qb, qe)), kbv = s.call_view(s.rows(block[0], kb, ke)),
                   vbv = s.call_view(s.rows(block[1], kb, ke));
        TensorView pdq = s.rows(part_dq, qb, qe), pdk = s.rows(part_kv[0], kb, ke), pdv = s.rows(part_kv[1], kb, ke);
        TensorView pdq_call = s.call_view(pdq), pdk_call = s.call_view(pdk), pdv_call = s.call_view(pdv);
        // The CUDA plugins take only compact LSEs: a range of the shard's rows (zigzag's one-chunk
        // calls) is copied into a compact [batch, heads, rows] first, in stream order. (Varlen's
        // halves are compact each.)
        TensorView lv = s.rows(lse, qb, qe);
        if (!lv.compact()) {
          TensorView rows(lse_rows_mem.get(), dl_f32(), s.device, {s.batch, s.heads_q, qe - qb});
          o.copy(*lv, *rows, stream);
          lv = rows;
        }
        lv = s.call_view(lv);
        attnrt_backward_args a{};
        a.struct_size = sizeof a;
        a.dout = dov.dl();
        a.q = qv.dl();
        a.k = kbv.dl();
        a.v = vbv.dl();
        a.out = ov.dl();
        a.lse = lv.dl();
        a.dq = pdq_call.dl();
        a.dk = pdk_call.dl();
        a.dv = pdv_call.dl();
        a.cu_seqlens_q = a.cu_seqlens_k = cu.get();
        backend.backward(call.desc, a, options.num_threads, stream);
        TensorView dqa = s.rows(dq_acc, qb, qe);
        o.add(*dqa, *pdq, stream);
        if (pending_acc) {  // the accumulator of this block has to be here before adding to it
          pending_acc->wait();
          pending_acc.reset();
        }
        const auto acc = pair_of(dkv[cur_acc].get(), dl_f32());
        TensorView dka = s.rows(acc[0], kb, ke), dva = s.rows(acc[1], kb, ke);
        o.add(*dka, *pdk, stream);
        o.add(*dva, *pdv, stream);
      }
      if (pending_acc) {  // a step with nothing visible only passes the accumulator on
        pending_acc->wait();
        pending_acc.reset();
      }
      if (more) {
        const Transfer send{next, dkv[cur_acc].get(), dkv_bytes}, receive{prev, dkv[1 - cur_acc].get(), dkv_bytes};
        pending_acc = transport.exchange({&send, 1}, {&receive, 1}, stream);
        cur_acc = 1 - cur_acc;
        pending_kv->wait();
        cur = 1 - cur;
      }
    }
    // Home: the accumulator held now is that of rank (rank - last step)'s block, and ours is on
    // rank (rank + last step).
    const int last = s.plan.num_steps - 1;
    if (last > 0) {
      const int owner = (s.rank - last % s.world_size + s.world_size) % s.world_size;
      const int holder = (s.rank + last) % s.world_size;
      const Transfer send{owner, dkv[cur_acc].get(), dkv_bytes}, receive{holder, dkv[1 - cur_acc].get(), dkv_bytes};
      transport.exchange({&send, 1}, {&receive, 1}, stream)->wait();
      cur_acc = 1 - cur_acc;
    }
    const auto acc = pair_of(dkv[cur_acc].get(), dl_f32());
    if (s.varlen) {
      halves_to_shard(o, s.packed, dq_acc, *shard.dq, stream);
      halves_to_shard(o, s.packed, acc[0], *shard.dk, stream);
      halves_to_shard(o, s.packed, acc[1], *shard.dv, stream);
    } else {
      DLTensor dq = *shard.dq, dk = *shard.dk, dv = *shard.dv;
      o.copy(*dq_acc, dq, stream);
      o.copy(*acc[0], dk, stream);
      o.copy(*acc[1], dv, stream);
    }
  }
}

}  // namespace

void RingAttention::backward(const attnrt_attention_desc& desc, const attnrt_backward_args& shard) {
  abort_on_error(transport_, [&] { backward_rank(backend_, transport_, options_, ops(desc), desc, shard); });
}

}  // namespace attnrt::cp
