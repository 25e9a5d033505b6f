"""attnrt.torch.context_parallel_attention: ring attention over a sequence split across ranks,
the ranks being threads of this process joined by attnrt's in-process transport (the CPU double
of NCCL, which keeps NCCL's rules). Every rank's out, LSE and q/k/v gradients (through autograd),
put back in sequence order, must equal one attnrt.torch.attention call on the whole sequence
with the same plugin; a ring cut with the wrong layout must not. Then the shard helpers and the
refusals. CPU only."""
import threading

import pytest

torch = pytest.importorskip("torch")
import attnrt  # noqa: E402
import attnrt.torch as at  # noqa: E402

# Each rank's wait is bounded, so a ring that deadlocks fails with the transport's message.
TIMEOUT_MS = 20000


def run_ranks(world, fn):
    """fn(rank, transport) on `world` threads, one in-process group; the results in rank order.
    A rank's exception is re-raised (the first one, by rank)."""
    group = attnrt.InProcessGroup(world, TIMEOUT_MS)
    results, errors = [None] * world, [None] * world

    def body(rank):
        try:
            results[rank] = fn(rank, group.transport(rank))
        except BaseException as e:  # noqa: B902 - handed to the main thread
            errors[rank] = e

    threads = [threading.Thread(target=body, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(2 * TIMEOUT_MS / 1000)
        assert not t.is_alive(), "a rank did not finish"
    for e in errors:
        if e is not None:
            raise e
    return results


def make(b=2, s=24, h=4, hkv=2, d=16, dv=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, s, h, d, generator=g)
    k = torch.randn(b, s, hkv, d, generator=g)
    v = torch.randn(b, s, hkv, dv or d, generator=g)
    dout = torch.randn(b, s, h, dv or d, generator=g)
    return q, k, v, dout


def single_call(q, k, v, dout, **kw):
    """out, lse, dq, dk, dv of one attention call on the whole sequence."""
    q, k, v = (t.clone().requires_grad_() for t in (q, k, v))
    out, lse = at.attention(q, k, v, return_lse=True, **kw)
    out.backward(dout)
    return out.detach(), lse, q.grad, k.grad, v.grad


def ring_call(world, q, k, v, dout, layout, ring_layout=None, **kw):
    """The same through the ring: each rank gets its shards (cut with `layout`), runs forward and
    backward (autograd), and the shards come back together (with `layout`) in sequence order.
    ring_layout: the layout the ring is told, when it differs (a wrongly cut ring)."""

    def rank(r, transport):
        qs, ks, vs = (at.context_parallel_shard(t, r, world, layout).clone().requires_grad_() for t in (q, k, v))
        out, lse = at.context_parallel_attention(qs, ks, vs, transport=transport, layout=ring_layout or layout,
                                                 return_lse=True, **kw)
        assert lse.shape == (q.shape[0], q.shape[2], qs.shape[1]) and not lse.requires_grad
        out.backward(at.context_parallel_shard(dout, r, world, layout))
        return out.detach(), lse, qs.grad, ks.grad, vs.grad

    shards = run_ranks(world, rank)
    dims = (1, 2, 1, 1, 1)  # lse [batch, heads, seq]
    return tuple(at.context_parallel_unshard([s[i] for s in shards], layout, dim) for i, dim in enumerate(dims))


def max_error(got, want):
    """max |got - want| over max(1, max |want|): libattnrt's ring tests' measure."""
    return ((got - want).abs().max() / max(1.0, want.abs().max().item())).item()


CASES = [
    # name, world, implementation, layout, kwargs, heads_kv
    ("n2_eager_causal_zigzag", 2, "eager", "zigzag", dict(causal=True), 2),
    ("n3_sdpa_causal_zigzag", 3, "sdpa", "zigzag", dict(causal=True), 2),
    ("n2_sdpa_full_zigzag_mqa", 2, "sdpa", "zigzag", dict(causal=False), 1),
    ("n3_eager_full_contiguous", 3, "eager", "contiguous", dict(causal=False), 2),
    ("n2_sdpa_causal_window_contiguous", 2, "sdpa", "contiguous", dict(causal=True, window_left=5), 2),
    ("n3_eager_window_both_sides_softcap_contiguous", 3, "eager", "contiguous",
     dict(window_left=4, window_right=3, softcap=5.0, softmax_scale=0.3), 2),
]


@pytest.mark.parametrize("name,world,implementation,layout,kw,hkv", CASES, ids=[c[0] for c in CASES])
def test_ring_matches_the_single_call(name, world, implementation, layout, kw, hkv):
    q, k, v, dout = make(hkv=hkv, seed=world)
    want = single_call(q, k, v, dout, implementation=implementation, **kw)
    got = ring_call(world, q, k, v, dout, layout, implementation=implementation, **kw)
    # fp32: the ring adds its blocks' partial results in another order than one call does
    # (libattnrt's own ring tests use the same bound).
    for what, g, w in zip(("out", "lse", "dq", "dk", "dv"), got, want):
        assert g.shape == w.shape, what
        assert max_error(g, w) < 5e-6, f"{what}: {max_error(g, w)}"


def test_a_wrongly_cut_ring_fails_the_comparison():
    # Contiguous shards given to a zigzag ring: every rank computes with the wrong positions, so
    # the causal mask is wrong; the comparison above must see it.
    q, k, v, dout = make()
    want = single_call(q, k, v, dout, implementation="sdpa", causal=True)
    got = ring_call(2, q, k, v, dout, "contiguous", ring_layout="zigzag", implementation="sdpa", causal=True)
    assert max_error(got[0], want[0]) > 1e-2


def test_head_dim_v_and_no_grad():
    q, k, v, dout = make(dv=8)
    want = at.attention(q, k, v, implementation="sdpa", causal=True)

    def rank(r, transport):
        with torch.no_grad():
            shards = [at.context_parallel_shard(t, r, 2).requires_grad_() for t in (q, k, v)]
            out = at.context_parallel_attention(*shards, transport=transport, causal=True)
        assert not out.requires_grad and out.shape == (2, 12, 4, 8)
        return out

    got = at.context_parallel_unshard(run_ranks(2, rank))
    assert max_error(got, want) < 5e-6


@pytest.mark.parametrize("layout", ["zigzag", "contiguous"])
@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_shard_and_unshard_round_trip(layout, world):
    x = torch.arange(2 * 48 * 24, dtype=torch.float32).view(2, 48, 24)
    for dim in (1, 2):
        shards = [at.context_parallel_shard(x, r, world, layout, dim) for r in range(world)]
        assert all(s.shape[dim] == x.shape[dim] // world for s in shards)
        assert torch.equal(at.context_parallel_unshard(shards, layout, dim), x)


def test_zigzag_shards_hold_chunks_r_and_2n_minus_1_minus_r():
    x = torch.arange(8)[None]  # 2 ranks: 4 chunks of 2
    assert at.context_parallel_shard(x, 0, 2).tolist() == [[0, 1, 6, 7]]
    assert at.context_parallel_shard(x, 1, 2).tolist() == [[2, 3, 4, 5]]
    assert at.context_parallel_shard(x, 1, 2, "contiguous").tolist() == [[4, 5, 6, 7]]
    assert at.context_parallel_shard(x, 1, 2, attnrt.RingLayout.CONTIGUOUS).tolist() == [[4, 5, 6, 7]]


def test_shard_helpers_name_what_is_wrong():
    x = torch.zeros(1, 10, 2)
    with pytest.raises(ValueError, match=r"x's dimension 1 \(10\) is not a positive multiple of 4"):
        at.context_parallel_shard(x, 0, 2)
    with pytest.raises(ValueError, match=r"rank 2 is outside \[0, 2\)"):
        at.context_parallel_shard(x, 2, 2, "contiguous")
    with pytest.raises(ValueError, match="layout must be 'zigzag' or 'contiguous', got 'striped'"):
        at.context_parallel_shard(x, 0, 2, "striped")
    with pytest.raises(ValueError, match=r"shard 1 has shape \[1, 4, 2\], shard 0 \[1, 6, 2\]"):
        at.context_parallel_unshard([torch.zeros(1, 6, 2), torch.zeros(1, 4, 2)])
    with pytest.raises(ValueError, match="shard length 5 .* is odd"):
        at.context_parallel_unshard([torch.zeros(1, 5, 2)] * 2)


def test_refusals_name_the_feature():
    q, k, v, _ = make()

    # What the ring cannot do is refused on every rank before anything is sent, with
    # libattnrt's reason (attnrt_ring_unsupported_reason's text).
    def sinks(r, transport):
        shards = [at.context_parallel_shard(t, r, 2) for t in (q, k, v)]
        with pytest.raises(attnrt.UnsupportedError, match="sinks are not supported by context parallelism"):
            at.context_parallel_attention(*shards, transport=transport, causal=True, sinks=torch.zeros(4))

    run_ranks(2, sinks)

    # A zigzag shard of odd length: the global sequence cannot be cut into 2N equal chunks.
    def odd(r, transport):
        shards = [t[:, :11] for t in (q, k, v)]
        with pytest.raises(attnrt.InvalidArgumentError, match="seqlen_q 22 is not a positive multiple of 4"):
            at.context_parallel_attention(*shards, transport=transport)

    run_ranks(2, odd)

    t = attnrt.InProcessGroup(1).transport(0)
    with pytest.raises(ValueError, match=r"q must be this rank's shard \[batch, shard_len, heads, head_dim\], got "
                                         r"shape \[24, 4, 16\]"):
        at.context_parallel_attention(q[0], k, v, transport=t)
    with pytest.raises(ValueError, match=r"v \[2, 20, 2, 16\] must match k \[2, 24, 2, 16\]"):
        at.context_parallel_attention(q, k, v[:, :20], transport=t)
    with pytest.raises(attnrt.UnsupportedError, match="q dtype torch.float64 is not supported"):
        at.context_parallel_attention(q.double(), k.double(), v.double(), transport=t)
    with pytest.raises(ValueError, match="pass group or transport, not both"):
        at.context_parallel_attention(q, k, v, object(), transport=t)


def test_a_gloo_group_on_the_cpu_is_refused():
    import torch.distributed as dist

    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="torch.distributed is not initialised"):
        at.context_parallel_attention(*make()[:3])
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        with pytest.raises(attnrt.UnsupportedError, match="attnrt has no gloo transport"):
            at.context_parallel_attention(*make()[:3], causal=True)
    finally:
        dist.destroy_process_group()


def test_torch_compile_runs_it_as_a_graph_break_and_fullgraph_refuses_it():
    q, k, v, dout = make(b=1, s=8)
    t = attnrt.InProcessGroup(1).transport(0)

    def f(q, k, v):
        return at.context_parallel_attention(q * 2, k, v, transport=t, causal=True).sum(-1)

    try:
        q1 = q.clone().requires_grad_()
        y = torch.compile(f, backend="eager")(q1, k, v)
        y.sum().backward()
        q2 = q.clone().requires_grad_()
        f(q2, k, v).sum().backward()
        assert torch.equal(y, f(q, k, v)) and torch.equal(q1.grad, q2.grad)
        with pytest.raises(Exception, match="collective over a C ring"):
            torch.compile(lambda q, k, v: f(q, k, v) + 1, backend="eager", fullgraph=True)(q, k, v)
    finally:
        torch._dynamo.reset()  # Dynamo's guards hold `t`


def test_ranks_that_disagree_fail_instead_of_waiting():
    # Rank 0 says the sequence is 24 long, rank 1 that it is 16: their first K/V messages differ
    # in size; the receiving rank fails naming both sizes and aborts the group, so its partner
    # fails too (attnrt.DeviceError with that reason) instead of waiting for the timeout.
    errors = [None, None]

    def rank(r, transport):
        q, k, v, _ = make(b=1, s=12 if r == 0 else 8)
        try:
            at.context_parallel_attention(q, k, v, transport=transport, causal=True)
        except attnrt.Error as e:
            errors[r] = e

    run_ranks(2, rank)
    assert all(e is not None and "the receive expects" in str(e) for e in errors), errors
    # Which rank receives the mismatched message first is up to the threads' timing.
    aborted = [r for r in (0, 1) if isinstance(errors[r], attnrt.DeviceError)]
    assert len(aborted) == 1, errors
    assert f"rank {aborted[0]}: the group was aborted" in str(errors[aborted[0]]), errors


# ---- Packed batches (varlen: cu_seqlens)


def make_packed(lens, h=4, hkv=2, d=16, dv=None, seed=0):
    """q, k, v, dout of a packed batch of sequences of lengths `lens` ([total, heads, dim]) and
    its cu_seqlens (CPU int32)."""
    cu = torch.tensor([0] + lens, dtype=torch.int32).cumsum(0, dtype=torch.int32)
    total = int(cu[-1])
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(total, h, d, generator=g)
    k = torch.randn(total, hkv, d, generator=g)
    v = torch.randn(total, hkv, dv or d, generator=g)
    dout = torch.randn(total, h, dv or d, generator=g)
    return q, k, v, dout, cu


def single_varlen_call(q, k, v, dout, cu, implementation, causal=False, softmax_scale=None, softcap=0.0):
    """out, lse, dq, dk, dv of one varlen call of the plugin on the whole packed batch
    (attnrt.torch.attention has no varlen form: the core module's Backend takes cu_seqlens)."""
    lens = (cu[1:] - cu[:-1]).tolist()
    d = attnrt.Desc()
    d.dtype = attnrt.DType.FP32
    d.batch, d.seqlen_q, d.seqlen_k = len(lens), max(lens), max(lens)
    d.heads_q, d.head_dim = q.shape[1], q.shape[2]
    d.heads_kv, d.head_dim_v = k.shape[1], v.shape[2]
    d.softmax_scale = softmax_scale or q.shape[2] ** -0.5
    d.causal, d.softcap, d.is_varlen, d.return_lse = int(causal), softcap, 1, 1
    backend = attnrt.Runtime(None, ["attnrt.device=cpu"]).resolve(d, implementation)
    assert backend.name == implementation
    out = q.new_empty(q.shape[:2] + (v.shape[2],))
    lse = q.new_empty((q.shape[1], q.shape[0]))
    backend.forward(d, q, k, v, out, lse=lse, cu_seqlens_q=cu, cu_seqlens_k=cu, num_threads=1)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    backend.backward(d, dout, q, k, v, out, lse, dq, dk, dv, cu_seqlens_q=cu, cu_seqlens_k=cu, num_threads=1)
    return out, lse, dq, dk, dv


def per_sequence_calls(q, k, v, dout, cu, **kw):
    """The same as attnrt.torch.attention calls, one per sequence (batch 1), joined: the varlen
    reference's own check."""
    parts = []
    for i in range(cu.numel() - 1):
        s = slice(int(cu[i]), int(cu[i + 1]))
        parts.append(single_call(*(t[s][None] for t in (q, k, v, dout)), **kw))
    dims = (1, 2, 1, 1, 1)
    return tuple(torch.cat([p[i] for p in parts], dim)[0] for i, dim in enumerate(dims))


def ring_varlen_call(world, q, k, v, dout, cu, layout, cut=None, **kw):
    """The packed batch through the ring: each rank gets its packed shards, runs forward and
    backward (autograd) with the global cu_seqlens, and the shards come back together in the
    batch's order. cut: (layout, cu_seqlens) the shards are cut and put back with, when they
    differ from what the ring is told (a wrongly cut ring)."""
    cut_layout, cut_cu = cut or (layout, cu)

    def rank(r, transport):
        qs, ks, vs = (at.context_parallel_shard(t, r, world, cut_layout, cu_seqlens=cut_cu).clone().requires_grad_()
                      for t in (q, k, v))
        out, lse = at.context_parallel_attention(qs, ks, vs, transport=transport, layout=layout, cu_seqlens=cu,
                                                 return_lse=True, **kw)
        rows = q.shape[0] // world
        assert out.shape == (rows, q.shape[1], v.shape[2]) and lse.shape == (q.shape[1], rows)
        assert lse.dtype == torch.float32 and not lse.requires_grad
        out.backward(at.context_parallel_shard(dout, r, world, cut_layout, cu_seqlens=cut_cu))
        return out.detach(), lse, qs.grad, ks.grad, vs.grad

    shards = run_ranks(world, rank)
    dims = (0, 1, 0, 0, 0)  # lse [heads, total]
    return tuple(at.context_parallel_unshard([s[i] for s in shards], cut_layout, dim, cu_seqlens=cut_cu)
                 for i, dim in enumerate(dims))


VARLEN_CASES = [
    # name, world, implementation, layout, lengths, kwargs, heads_kv, head_dim_v
    ("n2_eager_causal_zigzag", 2, "eager", "zigzag", [8, 20, 12], dict(causal=True), 2, None),
    ("n3_sdpa_causal_zigzag", 3, "sdpa", "zigzag", [12, 30, 6], dict(causal=True), 2, None),
    ("n2_sdpa_full_zigzag_mqa", 2, "sdpa", "zigzag", [16, 4], dict(causal=False), 1, None),
    ("n3_eager_full_contiguous", 3, "eager", "contiguous", [9, 3, 15], dict(causal=False), 2, None),
    ("n2_sdpa_causal_contiguous_max_seqlen_bound", 2, "sdpa", "contiguous", [10, 4, 14],
     dict(causal=True, max_seqlen=32), 2, None),
    ("n3_eager_causal_zigzag_softcap_dv", 3, "eager", "zigzag", [6, 18],
     dict(causal=True, softcap=5.0, softmax_scale=0.3), 2, 8),
]


@pytest.mark.parametrize("name,world,implementation,layout,lens,kw,hkv,dv", VARLEN_CASES,
                         ids=[c[0] for c in VARLEN_CASES])
def test_varlen_ring_matches_the_single_varlen_call(name, world, implementation, layout, lens, kw, hkv, dv):
    q, k, v, dout, cu = make_packed(lens, hkv=hkv, dv=dv, seed=world)
    ref_kw = {key: val for key, val in kw.items() if key != "max_seqlen"}
    want = single_varlen_call(q, k, v, dout, cu, implementation, **ref_kw)
    # The reference is what attnrt.torch.attention gives sequence by sequence.
    per_seq = per_sequence_calls(q, k, v, dout, cu, implementation=implementation, **ref_kw)
    for what, g, w in zip(("out", "lse", "dq", "dk", "dv"), per_seq, want):
        assert max_error(g, w) < 5e-6, f"reference {what}: {max_error(g, w)}"
    got = ring_varlen_call(world, q, k, v, dout, cu, layout, implementation=implementation, **kw)
    for what, g, w in zip(("out", "lse", "dq", "dk", "dv"), got, want):
        assert g.shape == w.shape, what
        assert max_error(g, w) < 5e-6, f"{what}: {max_error(g, w)}"


@pytest.mark.parametrize("cut", ["contiguous_shards", "one_sequence"])
def test_a_wrongly_cut_varlen_ring_fails_the_comparison(cut):
    # The ring told zigzag and the global cu_seqlens, given shards cut contiguously, or cut as if
    # the batch were one sequence: rows sit at the wrong positions, so masks and sequence
    # boundaries are wrong; the comparison above must see it.
    q, k, v, dout, cu = make_packed([8, 20, 12])
    want = single_varlen_call(q, k, v, dout, cu, "sdpa", causal=True)
    wrong = ("contiguous", cu) if cut == "contiguous_shards" else ("zigzag", [0, int(cu[-1])])
    got = ring_varlen_call(2, q, k, v, dout, cu, "zigzag", cut=wrong, implementation="sdpa", causal=True)
    assert max_error(got[0], want[0]) > 1e-2


def test_varlen_cu_seqlens_as_ints_int64_and_no_grad():
    q, k, v, _, cu = make_packed([4, 12])
    want = single_varlen_call(q, k, v, torch.zeros_like(q), cu, "sdpa", causal=True)[0]

    def rank(r, transport):
        given = cu.tolist() if r == 0 else cu.long()  # every rank the same offsets, in any integer form
        with torch.no_grad():
            shards = [at.context_parallel_shard(t, r, 2, cu_seqlens=given).requires_grad_() for t in (q, k, v)]
            out = at.context_parallel_attention(*shards, transport=transport, causal=True, cu_seqlens=given)
        assert not out.requires_grad and out.shape == (8, 4, 16)
        return out

    got = at.context_parallel_unshard(run_ranks(2, rank), cu_seqlens=cu)
    assert max_error(got, want) < 5e-6


@pytest.mark.parametrize("layout", ["zigzag", "contiguous"])
@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_varlen_shard_and_unshard_round_trip(layout, world):
    parts = 2 * world if layout == "zigzag" else world
    lens = [parts, 0, 3 * parts, 2 * parts]  # an empty sequence too
    total = sum(lens)
    cu = torch.tensor([0] + lens).cumsum(0)
    x = torch.arange(total * 6, dtype=torch.float32).view(total, 2, 3)
    lse_like = torch.arange(3 * total).view(3, total)
    for t, dim in ((x, 0), (lse_like, 1)):
        shards = [at.context_parallel_shard(t, r, world, layout, dim, cu_seqlens=cu) for r in range(world)]
        assert all(s.shape[dim] == total // world for s in shards)
        assert torch.equal(at.context_parallel_unshard(shards, layout, dim, cu_seqlens=cu), t)


def test_varlen_shards_cut_every_sequence_by_its_own_length():
    x = torch.arange(12)  # sequences [0, 4) and [4, 12): chunks of 1 and 2 over 2 ranks (zigzag: 4 chunks)
    cu = [0, 4, 12]
    assert at.context_parallel_shard(x, 0, 2, cu_seqlens=cu).tolist() == [0, 3, 4, 5, 10, 11]
    assert at.context_parallel_shard(x, 1, 2, cu_seqlens=cu).tolist() == [1, 2, 6, 7, 8, 9]
    assert at.context_parallel_shard(x, 0, 2, "contiguous", cu_seqlens=cu).tolist() == [0, 1, 4, 5, 6, 7]
    assert at.context_parallel_shard(x, 1, 2, "contiguous", cu_seqlens=cu).tolist() == [2, 3, 8, 9, 10, 11]


def test_varlen_shard_helpers_name_what_is_wrong():
    x = torch.zeros(14, 2)
    with pytest.raises(ValueError, match=r"sequence 1 of the packed batch has length 6, not a multiple of 4 \(zigzag "
                                         r"layout over 2 ranks"):
        at.context_parallel_shard(x, 0, 2, cu_seqlens=[0, 8, 14])
    with pytest.raises(ValueError, match=r"x's dimension 0 \(14\) differs from the packed batch's total length "
                                         r"cu_seqlens\[-1\] = 16"):
        at.context_parallel_shard(x, 0, 2, cu_seqlens=[0, 8, 16])
    with pytest.raises(ValueError, match=r"cu_seqlens\[0\] must be 0, got 2"):
        at.context_parallel_shard(x, 0, 1, cu_seqlens=[2, 14])
    with pytest.raises(ValueError, match=r"cu_seqlens must be non-decreasing \(at index 2\)"):
        at.context_parallel_shard(x, 0, 1, cu_seqlens=[0, 8, 6, 14])
    with pytest.raises(ValueError, match="cu_seqlens must hold integers"):
        at.context_parallel_shard(x, 0, 1, cu_seqlens=torch.tensor([0.0, 14.0]))
    with pytest.raises(ValueError, match=r"rank 2 is outside \[0, 2\)"):
        at.context_parallel_shard(x, 2, 2, "contiguous", cu_seqlens=[0, 8, 14])
    with pytest.raises(ValueError, match=r"2 shards \(joined\)'s dimension 0 \(12\) differs .* = 14"):
        at.context_parallel_unshard([torch.zeros(6, 2)] * 2, "contiguous", cu_seqlens=[0, 8, 14])


def test_varlen_refusals():
    q, k, v, _, _ = make_packed([6, 10])

    # A sequence whose length is not a multiple of 2N, the shards of the right total length:
    # libattnrt's ring names the sequence (on every rank, before anything is sent).
    def uneven(r, transport):
        shards = [t[8 * r:8 * r + 8] for t in (q, k, v)]
        with pytest.raises(attnrt.InvalidArgumentError, match="sequence 0 of the packed batch has length 6, not a "
                                                              "multiple of 4"):
            at.context_parallel_attention(*shards, transport=transport, cu_seqlens=[0, 6, 16])

    run_ranks(2, uneven)

    # A sliding window with varlen: refused by the ring with its reason.
    def window(r, transport):
        shards = [at.context_parallel_shard(t, r, 2, cu_seqlens=[0, 4, 16]) for t in (q, k, v)]
        with pytest.raises(attnrt.UnsupportedError, match=r"sliding windows \(window_left 3, window_right -1\) with "
                                                          "varlen are not supported by context parallelism"):
            at.context_parallel_attention(*shards, transport=transport, causal=True, window_left=3,
                                          cu_seqlens=[0, 4, 16])

    run_ranks(2, window)

    t = attnrt.InProcessGroup(1).transport(0)
    cu = [0, 6, 16]
    with pytest.raises(ValueError, match=r"with cu_seqlens q must be this rank's packed shard \[total / world_size, "
                                         r"heads, head_dim\], got shape \[1, 16, 4, 16\]"):
        at.context_parallel_attention(q[None], k, v, transport=t, cu_seqlens=cu)
    with pytest.raises(ValueError, match="k has 12 rows, q 16: varlen context parallelism is self-attention"):
        at.context_parallel_attention(q, k[:12], v[:12], transport=t, cu_seqlens=cu)
    with pytest.raises(ValueError, match=r"max_seqlen 8 is less than the longest sequence of cu_seqlens \(10\)"):
        at.context_parallel_attention(q, k, v, transport=t, cu_seqlens=cu, max_seqlen=8)
    with pytest.raises(ValueError, match="max_seqlen without cu_seqlens"):
        at.context_parallel_attention(q[None], k[None], v[None], transport=t, max_seqlen=16)
    # The shards' total differs from cu_seqlens': libattnrt names the tensor.
    with pytest.raises(attnrt.InvalidArgumentError,
                       match=r"q must be rank 0's shard \(a packed batch of 2 sequences, 16 tokens"):
        at.context_parallel_attention(q[:12], k[:12], v[:12], transport=t, cu_seqlens=cu)
