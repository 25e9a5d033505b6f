"""attnrt's core module on NumPy arrays (DLPack, no torch): resolution, forward against a NumPy
reference, the caller's workspace, and errors as attnrt.Error subclasses naming the problem."""
import logging
import math

import numpy as np
import pytest

import attnrt


def reference(q, k, v, scale, causal):
    b, sq, h, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    g = h // hkv
    out = np.zeros((b, sq, h, v.shape[3]))
    lse = np.zeros((b, h, sq))
    for bi in range(b):
        for hi in range(h):
            s = scale * q[bi, :, hi, :].astype(np.float64) @ k[bi, :, hi // g, :].astype(np.float64).T
            if causal:
                i = np.arange(sq)[:, None]
                j = np.arange(sk)[None, :]
                s = np.where(j > i + sk - sq, -np.inf, s)
            m = s.max(axis=1, keepdims=True)
            p = np.exp(s - m)
            lse[bi, hi] = (m + np.log(p.sum(axis=1, keepdims=True)))[:, 0]
            out[bi, :, hi, :] = (p / p.sum(axis=1, keepdims=True)) @ v[bi, :, hi // g, :]
    return out, lse


def desc_for(q, k, v, causal):
    d = attnrt.Desc()
    d.dtype = attnrt.DType.FP32
    d.batch, d.seqlen_q, d.heads_q, d.head_dim = q.shape
    d.seqlen_k, d.heads_kv = k.shape[1], k.shape[2]
    d.head_dim_v = v.shape[3]
    d.softmax_scale = 1.0 / math.sqrt(q.shape[3])
    d.causal = int(causal)
    d.return_lse = 1
    return d


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((2, 9, 4, 16), dtype=np.float32)
    k = rng.standard_normal((2, 11, 2, 16), dtype=np.float32)
    v = rng.standard_normal((2, 11, 2, 16), dtype=np.float32)
    return q, k, v


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
@pytest.mark.parametrize("caller_workspace", [False, True])
def test_forward_matches_numpy(runtime, implementation, caller_workspace):
    q, k, v = inputs()
    d = desc_for(q, k, v, causal=True)
    backend = runtime.resolve(d, implementation)
    assert backend.name == implementation
    assert d.device_type == 1  # kDLCPU, filled by resolve
    out = np.zeros((2, 9, 4, 16), dtype=np.float32)
    lse = np.zeros((2, 4, 9), dtype=np.float32)
    ws = None
    if caller_workspace:
        ws = np.zeros(backend.workspace_size(d, False, 1) + 255, dtype=np.uint8)
    backend.forward(d, q, k, v, out, lse=lse, workspace=ws, num_threads=1)
    ref_out, ref_lse = reference(q, k, v, d.softmax_scale, causal=True)
    assert np.abs(out - ref_out).max() < 1e-5
    assert np.abs(lse - ref_lse).max() < 1e-4


def test_dense_with_workspace_forms_match_numpy_and_refuse_a_missing_workspace(runtime):
    """forward_with_workspace / backward_with_workspace (attnrt.torch's per-call path): every
    argument positional, the caller's workspace always; a call that needs one and gets None is
    refused with the reason, its outputs untouched. The backward is checked against the plain
    form's on the same inputs."""
    import copy
    q, k, v = inputs(3)
    d = desc_for(q, k, v, causal=True)
    backend = runtime.resolve(d, "sdpa")
    no_lse = copy.copy(d)
    no_lse.return_lse = 0
    assert (no_lse.device_type, no_lse.head_dim, no_lse.causal, d.return_lse) == (d.device_type, 16, 1, 1)
    ref_out, ref_lse = reference(q, k, v, d.softmax_scale, causal=True)
    out = np.zeros((2, 9, 4, 16), dtype=np.float32)
    lse = np.zeros((2, 4, 9), dtype=np.float32)
    fwd_ws = np.zeros(backend.workspace_size(d, False, 1) + 255, dtype=np.uint8)
    backend.forward_with_workspace(d, q, k, v, out, lse, None, fwd_ws, 0, 1)
    assert np.abs(out - ref_out).max() < 1e-5 and np.abs(lse - ref_lse).max() < 1e-4
    out2 = np.zeros_like(out)
    backend.forward_with_workspace(no_lse, q, k, v, out2, None, None, fwd_ws, 0, 1)
    assert np.abs(out2 - ref_out).max() < 1e-5
    if backend.workspace_size(d, False, 1):
        untouched = np.full_like(out, 7.0)
        with pytest.raises(attnrt.InvalidArgumentError, match="workspace"):
            backend.forward_with_workspace(d, q, k, v, untouched, lse, None, None, 0, 1)
        assert (untouched == 7.0).all()
    rng = np.random.default_rng(4)
    dout = rng.standard_normal(out.shape, dtype=np.float32)
    grads = [np.zeros_like(t) for t in (q, k, v)]
    bwd_ws = np.zeros(backend.workspace_size(d, True, 1) + 255, dtype=np.uint8)
    backend.backward_with_workspace(d, dout, q, k, v, out, lse, *grads, None, None, bwd_ws, 0, 1)
    plain = [np.zeros_like(t) for t in (q, k, v)]
    backend.backward(d, dout, q, k, v, out, lse, *plain, num_threads=1)
    for got, want in zip(grads, plain):
        assert np.abs(want).max() > 0 and np.abs(got - want).max() < 1e-6


def test_strided_views_are_read_through_their_strides(runtime):
    q, k, v = inputs(1)
    qt = np.ascontiguousarray(q.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)  # [b, s, h, d] view of [b, h, s, d]
    assert not qt.flags.c_contiguous
    d = desc_for(qt, k, v, causal=False)
    backend = runtime.resolve(d, "sdpa")
    out = np.zeros((2, 9, 4, 16), dtype=np.float32)
    lse = np.zeros((2, 4, 9), dtype=np.float32)
    backend.forward(d, qt, k, v, out, lse=lse)
    assert np.abs(out - reference(q, k, v, d.softmax_scale, causal=False)[0]).max() < 1e-5


def test_errors_name_what_failed(runtime):
    q, k, v = inputs()
    d = desc_for(q, k, v, causal=False)
    backend = runtime.resolve(d, "eager")
    out = np.zeros((2, 9, 4, 16), dtype=np.float32)
    bad_out = np.zeros((2, 9, 4, 8), dtype=np.float32)
    with pytest.raises(attnrt.InvalidArgumentError, match="out") as e:
        backend.forward(d, q, k, v, bad_out, lse=np.zeros((2, 4, 9), dtype=np.float32))
    assert isinstance(e.value, ValueError) and e.value.status == 1
    needed = backend.workspace_size(d, False, 1)
    if needed:
        with pytest.raises(attnrt.InvalidArgumentError, match="exec.workspace_size"):
            backend.forward(d, q, k, v, out, lse=np.zeros((2, 4, 9), dtype=np.float32),
                            workspace=np.zeros(16, dtype=np.uint8), num_threads=1)
    with pytest.raises(attnrt.InvalidArgumentError, match="override"):
        attnrt.Runtime(None, ["+attn_implementation=eager"])
    strict = attnrt.Runtime(None, ["attnrt.strict=true", "attnrt.device=cpu"])
    with pytest.raises(attnrt.UnsupportedError, match="flash_attention_3"):
        strict.resolve(desc_for(q, k, v, causal=False), "flash_attention_3")
    assert attnrt.status_string(2) == "unsupported"


def test_paged_append_then_attention_matches_contiguous(runtime):
    """ABI 1.2: append_kv writes tokens into shuffled pages by slot (padding slots -1 skipped);
    paged attention over them equals attention over the contiguous keys."""
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 1, 4, 16), dtype=np.float32)
    k = rng.standard_normal((2, 20, 2, 16), dtype=np.float32)
    v = rng.standard_normal((2, 20, 2, 16), dtype=np.float32)
    page_size, pages_per_seq = 8, 3
    order = rng.permutation(2 * pages_per_seq + 1).astype(np.int32)  # one spare page
    table = order[: 2 * pages_per_seq].reshape(2, pages_per_seq)
    d = desc_for(q, k, v, causal=True)
    d.is_paged, d.page_size = 1, page_size
    backend = runtime.resolve(d, "sdpa")
    k_cache = np.full((2 * pages_per_seq + 1, page_size, 2, 16), np.nan, dtype=np.float32)
    v_cache = np.full_like(k_cache, np.nan)
    slots = np.array([table[b, t // page_size] * page_size + t % page_size for b in range(2) for t in range(20)],
                     dtype=np.int64)
    k_new = np.concatenate([k.reshape(40, 2, 16), np.full((1, 2, 16), np.nan, np.float32)])
    v_new = np.concatenate([v.reshape(40, 2, 16), np.full((1, 2, 16), np.nan, np.float32)])
    slots = np.concatenate([slots, np.array([-1], dtype=np.int64)])
    backend.append_kv(d, k_new, v_new, slots, k_cache, v_cache, num_threads=1)
    out = np.zeros((2, 1, 4, 16), dtype=np.float32)
    lse = np.zeros((2, 4, 1), dtype=np.float32)
    backend.forward(d, q, k_cache, v_cache, out, lse=lse, seqused_k=np.array([20, 20], dtype=np.int32),
                    block_table=table, num_threads=1)
    ref_out, ref_lse = reference(q, k, v, d.softmax_scale, causal=True)
    assert np.abs(out - ref_out).max() < 1e-5
    assert np.abs(lse - ref_lse).max() < 1e-4
    with pytest.raises(attnrt.Error, match="slot_mapping"):
        backend.append_kv(d, k_new, v_new, np.full(41, 10**6, dtype=np.int64), k_cache, v_cache)


def test_library_messages_go_to_logging_and_nothing_to_stderr(runtime, caplog, capfd):
    q, k, v = inputs()
    d = desc_for(q, k, v, causal=False)
    capfd.readouterr()
    with caplog.at_level(logging.DEBUG, logger="attnrt"):
        backend = runtime.resolve(d, "flash_attention_3")  # no CPU plugin: falls back, saying why
    assert backend.name in ("sdpa", "eager")
    warnings = [r.getMessage() for r in caplog.records if r.name == "attnrt" and r.levelno == logging.WARNING]
    assert any("flash_attention_3 requested but not usable on cpu" in m for m in warnings), warnings
    chosen = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any("attention backend: " + backend.name in m for m in chosen), chosen
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""
