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
  const RingSetup s = ring_setup(desc, transport, options.layout, backend, true);
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

  const size_t es = dtype_bytes(desc.dtype);
  const int64_t k_elems = s.batch * s.shard_k * s.heads_kv * s.head_dim;
  const int64_t v_elems = s.batch * s.shard_k * s.heads_kv * s.head_dim_v;
  // One buffer each: k (or dk) then v (or dv) at v_offset; blocks in the dtype, accumulators fp32.
  const size_t kv_bytes = v_offset(static_cast<size_t>(k_elems) * es) + static_cast<size_t>(v_elems) * es;
  const size_t dkv_bytes = v_offset(static_cast<size_t>(k_elems) * 4) + static_cast<size_t>(v_elems) * 4;
  const std::vector<int64_t> q_shape = s.q_shape(), k_shape = s.k_shape(), v_shape = s.v_shape();
  // A K/V-shaped pair of tensors (k then v) in one buffer of `dtype`: a block, or an accumulator.
  auto pair_of = [&](void* base, DLDataType dtype) {
    const size_t bytes = v_offset((dtype.bits / 8) * static_cast<size_t>(k_elems));
    return std::array<TensorView, 2>{
        TensorView(base, dtype, s.device, {k_shape[0], k_shape[1], k_shape[2], k_shape[3]}),
        TensorView(static_cast<char*>(base) + bytes, dtype, s.device,
                   {v_shape[0], v_shape[1], v_shape[2], v_shape[3]})};
  };
  std::array<std::shared_ptr<void>, 2> kv{o.allocate(kv_bytes, stream), o.allocate(kv_bytes, stream)};
  std::array<std::shared_ptr<void>, 2> dkv{o.allocate(dkv_bytes, stream), o.allocate(dkv_bytes, stream)};
  const auto part_kv_mem = o.allocate(kv_bytes, stream);
  const auto dq_acc_mem = o.allocate(static_cast<size_t>(s.batch * s.shard_q * s.heads_q * s.head_dim) * 4, stream);
  const auto lse_rows_mem = o.allocate(static_cast<size_t>(s.batch * s.heads_q * s.shard_q) * 4, stream);
  const auto part_dq_mem = o.allocate(static_cast<size_t>(s.batch * s.shard_q * s.heads_q * s.head_dim) * es, stream);
  TensorView dq_acc(dq_acc_mem.get(), dl_f32(), s.device, {q_shape[0], q_shape[1], q_shape[2], q_shape[3]});
  const TensorView part_dq(part_dq_mem.get(), s.dtype, s.device, {q_shape[0], q_shape[1], q_shape[2], q_shape[3]});
  const auto part_kv = pair_of(part_kv_mem.get(), s.dtype);
  const TensorView q(*shard.q), dout(*shard.dout), out(*shard.out), lse(*shard.lse);

  {
    {
      auto own = pair_of(kv[0].get(), s.dtype);
      auto acc = pair_of(dkv[0].get(), dl_f32());
      o.copy(*shard.k, *own[0], stream);
      o.copy(*shard.v, *own[1], stream);
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
        const TensorView qv = q.seq_rows(call.q_begin, call.q_end), dov = dout.seq_rows(call.q_begin, call.q_end),
                         ov = out.seq_rows(call.q_begin, call.q_end), kb = block[0].seq_rows(call.k_begin, call.k_end),
                         vb = block[1].seq_rows(call.k_begin, call.k_end);
        TensorView pdq = part_dq.seq_rows(call.q_begin, call.q_end),
                   pdk = part_kv[0].seq_rows(call.k_begin, call.k_end),
                   pdv = part_kv[1].seq_rows(call.k_begin, call.k_end);
        // The CUDA plugins take only compact LSEs: a range of the shard's rows (zigzag's one-chunk
        // calls) is copied into a compact [batch, heads, rows] first, in stream order.
        TensorView lv = lse.seq_rows(call.q_begin, call.q_end);
        if (!lv.compact()) {
          TensorView rows(lse_rows_mem.get(), dl_f32(), s.device, {s.batch, s.heads_q, call.q_end - call.q_begin});
          o.copy(*lv, *rows, stream);
          lv = rows;
        }
        attnrt_backward_args a{};
        a.struct_size = sizeof a;
        a.dout = dov.dl();
        a.q = qv.dl();
        a.k = kb.dl();
        a.v = vb.dl();
        a.out = ov.dl();
        a.lse = lv.dl();
        a.dq = pdq.dl();
        a.dk = pdk.dl();
        a.dv = pdv.dl();
        backend.backward(call.desc, a, options.num_threads, stream);
        TensorView dqa = dq_acc.seq_rows(call.q_begin, call.q_end);
        o.add(*dqa, *pdq, stream);
        if (pending_acc) {  // the accumulator of this block has to be here before adding to it
          pending_acc->wait();
          pending_acc.reset();
        }
        const auto acc = pair_of(dkv[cur_acc].get(), dl_f32());
        TensorView dka = acc[0].seq_rows(call.k_begin, call.k_end), dva = acc[1].seq_rows(call.k_begin, call.k_end);
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
    DLTensor dq = *shard.dq, dk = *shard.dk, dv = *shard.dv;
    o.copy(*dq_acc, dq, stream);
    o.copy(*acc[0], dk, stream);
    o.copy(*acc[1], dv, stream);
  }
}

}  // namespace

void RingAttention::backward(const attnrt_attention_desc& desc, const attnrt_backward_args& shard) {
  abort_on_error(transport_, [&] { backward_rank(backend_, transport_, options_, ops(desc), desc, shard); });
}

}  // namespace attnrt::cp
