"""The core module's context parallelism on NumPy arrays (no torch): attnrt.Ring over an
attnrt.InProcessGroup's transports (ranks as threads) against the same backend's single call on
the whole sequence; handles that outlive what they were made from; and the C API's errors as
attnrt.Error subclasses with its messages, NCCL's included (no NCCL library is needed)."""
import gc
import math
import threading

import numpy as np
import pytest

import attnrt

WORLD, SEQ = 2, 16


def desc(seqlen, causal=True, sinks=False):
    d = attnrt.Desc()
    d.dtype = attnrt.DType.FP32
    d.batch, d.seqlen_q, d.seqlen_k, d.heads_q, d.heads_kv, d.head_dim, d.head_dim_v = 2, seqlen, seqlen, 4, 2, 8, 8
    d.softmax_scale = 1.0 / math.sqrt(8)
    d.causal = int(causal)
    d.has_sinks = int(sinks)
    d.return_lse = 1
    return d


def zigzag_rows(rank, world, seqlen):
    c = seqlen // (2 * world)
    return np.r_[rank * c:(rank + 1) * c, (2 * world - 1 - rank) * c:(2 * world - rank) * c]


def test_ring_on_numpy_matches_the_single_call(runtime):
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, SEQ, 4, 8), dtype=np.float32)
    k, v = (rng.standard_normal((2, SEQ, 2, 8), dtype=np.float32) for _ in range(2))
    dout = rng.standard_normal((2, SEQ, 4, 8), dtype=np.float32)
    d = desc(SEQ)
    backend = runtime.resolve(d, "sdpa")
    out, lse = np.zeros_like(q), np.zeros((2, 4, SEQ), dtype=np.float32)
    backend.forward(d, q, k, v, out, lse=lse, num_threads=1)
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    backend.backward(d, dout, q, k, v, out, lse, dq, dk, dv, num_threads=1)

    group = attnrt.InProcessGroup(WORLD, 20000)
    got = {name: np.full_like(x, np.nan) for name, x in (("out", out), ("lse", lse), ("dq", dq), ("dk", dk),
                                                          ("dv", dv))}
    errors = []

    def rank(r):
        try:
            ring = attnrt.Ring(backend, group.transport(r), attnrt.RingLayout.ZIGZAG)
            rows = zigzag_rows(r, WORLD, SEQ)
            qs, ks, vs, douts = (np.ascontiguousarray(x[:, rows]) for x in (q, k, v, dout))
            o, l = np.zeros_like(qs), np.zeros((2, 4, len(rows)), dtype=np.float32)
            ring.forward(d, qs, ks, vs, o, lse=l, num_threads=1)
            gq, gk, gv = np.zeros_like(qs), np.zeros_like(ks), np.zeros_like(vs)
            ring.backward(d, douts, qs, ks, vs, o, l, gq, gk, gv, num_threads=1)
            got["out"][:, rows], got["lse"][:, :, rows] = o, l
            got["dq"][:, rows], got["dk"][:, rows], got["dv"][:, rows] = gq, gk, gv
        except Exception as e:  # handed to the main thread
            errors.append(e)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(WORLD)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(40)
    assert not errors, errors
    for name, want in (("out", out), ("lse", lse), ("dq", dq), ("dk", dk), ("dv", dv)):
        assert np.abs(got[name] - want).max() <= 5e-6 * max(1.0, np.abs(want).max()), name


def test_handles_outlive_what_they_were_made_from(runtime):
    group = attnrt.InProcessGroup(1)
    transport = group.transport(0)
    assert (transport.rank, transport.world_size, transport.name) == (0, 1, "in-process")
    transport.synchronize()  # the in-process transport has finished on return: nothing to wait for
    d = desc(8)
    ring = attnrt.Ring(runtime.resolve(d, "eager"), transport, attnrt.RingLayout.CONTIGUOUS)
    del group, transport
    gc.collect()
    assert ring.layout == attnrt.RingLayout.CONTIGUOUS
    assert ring.unsupported_reason(d) == ""
    assert "sinks are not supported" in ring.unsupported_reason(desc(8, sinks=True), backward=True)
    q = np.ones((2, 8, 4, 8), dtype=np.float32)
    kv = np.ones((2, 8, 2, 8), dtype=np.float32)
    out = np.zeros_like(q)
    ring.forward(d, q, kv, kv, out, lse=np.zeros((2, 4, 8), dtype=np.float32))
    assert np.allclose(out, 1.0)


def test_errors_carry_the_c_message(runtime):
    with pytest.raises(attnrt.InvalidArgumentError, match="world_size must be >= 1, got 0"):
        attnrt.InProcessGroup(0)
    with pytest.raises(attnrt.InvalidArgumentError, match=r"rank 2 is outside \[0, 2\)"):
        attnrt.InProcessGroup(2).transport(2)
    d = desc(SEQ)
    ring = attnrt.Ring(runtime.resolve(d, "sdpa"), attnrt.InProcessGroup(2, 1000).transport(1))
    q = np.zeros((2, SEQ, 4, 8), dtype=np.float32)  # the whole sequence, not rank 1's half
    kv = np.zeros((2, SEQ, 2, 8), dtype=np.float32)
    with pytest.raises(attnrt.InvalidArgumentError, match=r"q must be rank 1's shard .* \[2, 8, 4, 8\], got "
                                                          r"\[2, 16, 4, 8\]"):
        ring.forward(d, q, kv, kv, np.zeros_like(q), lse=np.zeros((2, 4, SEQ), dtype=np.float32))


def test_nccl_entry_points_refuse_with_the_reason():
    missing = "/nonexistent/libnccl.so.2"
    with pytest.raises(attnrt.UnsupportedError, match="NCCL library /nonexistent/libnccl.so.2 cannot be opened"):
        attnrt.nccl_unique_id(missing)
    with pytest.raises(attnrt.UnsupportedError, match=missing):
        attnrt.Transport.nccl(bytes(128), 0, 2, 0, missing)
    with pytest.raises(attnrt.InvalidArgumentError, match="unique_id must be the 128 bytes of nccl_unique_id"):
        attnrt.Transport.nccl(b"short", 0, 2, 0, missing)
    with pytest.raises(attnrt.InvalidArgumentError, match=r"rank 2 is outside \[0, world_size 2\)"):
        attnrt.Transport.nccl(bytes(128), 2, 2, 0, missing)
    with pytest.raises(attnrt.InvalidArgumentError, match="comm must not be NULL"):
        attnrt.Transport.nccl_from_comm(0, 0, missing)


def test_backend_reports_the_configured_context_parallelism():
    d = desc(SEQ)
    assert attnrt.Runtime(None, ["attnrt.device=cpu"]).resolve(d, "sdpa").context_parallel() == (
        1, attnrt.RingLayout.ZIGZAG)
    rt = attnrt.Runtime(None, ["attnrt.device=cpu", "+attnrt.context_parallel.size=4",
                               "+attnrt.context_parallel.layout=contiguous"])
    assert rt.resolve(desc(SEQ), "sdpa").context_parallel() == (4, attnrt.RingLayout.CONTIGUOUS)
