"""attnrt.torch on a GPU (issue 18): a forward+backward captured in a CUDA graph and replayed gives
the eager-mode results; two streams at once give each stream's single-stream results; the ops
match torch's own SDPA within bf16 rounding. Skipped without CUDA (CI has none); run on the GPU
machine with the CUDA plugins installed beside libattnrt."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
import attnrt.torch as at  # noqa: E402

IMPLEMENTATIONS = ["flash_attention_2", "flash_attention_3", "sdpa", "eager"]


def make(b=2, s=256, h=8, hkv=2, d=128, seed=0, grad=True):
    # Drawn on the CPU: a CUDA generator's state is tied to graph capture, and one test's failed
    # capture must not break the others.
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, s, n, d, generator=g).to("cuda", torch.bfloat16) for n in (h, hkv, hkv))
    return [t.requires_grad_(grad) for t in (q, k, v)]


def available(implementation):
    q, k, v = make(grad=False)
    return at.backend_name(q, k, v, implementation, causal=True) == implementation


def expect_close_to_torch(ours, theirs, implementation):
    """out, dq, dk, dv within bf16's rounding of torch's SDPA (relative to each output's size)."""
    for name, a, b in zip(("out", "dq", "dk", "dv"), ours, theirs):
        err = (a.float() - b.float()).abs().max().item()
        assert err < 5e-2 * max(1.0, b.float().abs().max().item()), f"{implementation} {name}: {err}"


def step(q, k, v, dout, implementation):
    out = at.attention(q, k, v, implementation=implementation, causal=True)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), dout)
    return out, dq, dk, dv


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_matches_torch_sdpa(implementation):
    if not available(implementation):
        pytest.skip(f"{implementation} does not run here")
    q, k, v = make()
    dout = torch.randn(q.shape, generator=torch.Generator().manual_seed(9)).to(q)
    ours = step(q, k, v, dout, implementation)
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True, enable_gqa=True).transpose(1, 2)
    theirs = (ref, *torch.autograd.grad(ref, (q, k, v), dout))
    expect_close_to_torch(ours, theirs, implementation)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_transposed_views_as_transformers_passes_them(implementation):
    # transformers holds q/k/v as [batch, heads, seqlen, head_dim] and hands attnrt transposed
    # views: the batch stride is not seqlen x the row stride.
    if not available(implementation):
        pytest.skip(f"{implementation} does not run here")
    g = torch.Generator().manual_seed(5)
    qt, kt, vt = (torch.randn(3, n, 200, 64, generator=g).to("cuda", torch.bfloat16).requires_grad_() for n in (8, 2, 2))
    q, k, v = (t.transpose(1, 2) for t in (qt, kt, vt))
    dout = torch.randn(q.shape, generator=g).to(q)
    ours = step(q, k, v, dout, implementation)
    ref = torch.nn.functional.scaled_dot_product_attention(*(t.transpose(1, 2) for t in (q, k, v)), is_causal=True,
                                                           enable_gqa=True).transpose(1, 2)
    theirs = (ref, *torch.autograd.grad(ref, (q, k, v), dout))
    expect_close_to_torch(ours, theirs, implementation)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_cuda_graph_capture_and_replay(implementation):
    if not available(implementation):
        pytest.skip(f"{implementation} does not run here")
    q, k, v = make(seed=1)
    dout = torch.randn(q.shape, generator=torch.Generator().manual_seed(9)).to(q)
    # PyTorch's recipe: warm up on a side stream (resolution and the plugins' caches before capture;
    # the leaves' AccumulateGrad nodes then belong to that stream, not the default one, which
    # capture refuses), keeping no autograd graph alive.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        want = [t.detach().clone() for t in step(q, k, v, dout, implementation)]
        for _ in range(2):
            step(q, k, v, dout, implementation)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        got = step(q, k, v, dout, implementation)
    for _ in range(3):
        for t in got:
            t.zero_()
        graph.replay()
        torch.cuda.synchronize()
        for name, a, b in zip(("out", "dq", "dk", "dv"), got, want):
            # dQ by atomics (flash_attention_2/3's single-pass backward) is not bit-reproducible.
            assert torch.allclose(a.float(), b.float(), atol=2e-2, rtol=0), f"{implementation} {name}"
    # New inputs copied into the captured tensors: the replay computes on them.
    with torch.no_grad():
        q.copy_(make(seed=2)[0])
    graph.replay()
    fresh = step(q, k, v, dout, implementation)
    torch.cuda.synchronize()
    assert torch.allclose(got[0].float(), fresh[0].float(), atol=1e-6, rtol=0)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_two_streams_at_once(implementation):
    if not available(implementation):
        pytest.skip(f"{implementation} does not run here")
    cases = [make(b=4, s=1024, seed=s) for s in (3, 4)]
    douts = [torch.randn(c[0].shape, generator=torch.Generator().manual_seed(9)).to(c[0]) for c in cases]
    alone = [step(*c, d, implementation) for c, d in zip(cases, douts)]
    torch.cuda.synchronize()
    streams = [torch.cuda.Stream() for _ in cases]
    results = [None, None]
    for _ in range(3):
        for i, (c, d, s) in enumerate(zip(cases, douts, streams)):
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                results[i] = step(*c, d, implementation)
        torch.cuda.synchronize()
        for r, a in zip(results, alone):
            for name, x, y in zip(("out", "dq", "dk", "dv"), r, a):
                assert torch.allclose(x.float(), y.float(), atol=2e-2, rtol=0), f"{implementation} {name}"
