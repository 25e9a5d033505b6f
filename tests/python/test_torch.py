"""attnrt.torch: the custom ops against torch's own attention, opcheck, gradcheck, and
torch.compile(fullgraph=True) over a module that calls them. CPU only."""
import math

import pytest

torch = pytest.importorskip("torch")
import attnrt  # noqa: E402
import attnrt.torch as at  # noqa: E402


def reference(q, k, v, causal, sinks=None, window_left=-1):
    """fp64 attention in [batch, seq, heads, dim], with GQA, bottom-right causal, sinks."""
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    sq, sk = s.shape[-2], s.shape[-1]
    i = torch.arange(sq)[:, None] + sk - sq
    j = torch.arange(sk)[None, :]
    mask = torch.zeros(sq, sk, dtype=torch.bool)
    if causal:
        mask |= j > i
    if window_left >= 0:
        mask |= j < i - window_left
    s = s.masked_fill(mask, float("-inf"))
    if sinks is not None:
        s = torch.cat([s, sinks.double()[None, :, None, None].expand(s.shape[0], -1, sq, 1)], dim=-1)
    p = torch.softmax(s, dim=-1)[..., :sk]
    return (p @ v).transpose(1, 2)


def make(b=2, sq=7, sk=9, h=4, hkv=2, d=16, dtype=torch.float32, grad=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, sq, h, d, generator=g, dtype=dtype).requires_grad_(grad)
    k = torch.randn(b, sk, hkv, d, generator=g, dtype=dtype).requires_grad_(grad)
    v = torch.randn(b, sk, hkv, d, generator=g, dtype=dtype).requires_grad_(grad)
    return q, k, v


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
@pytest.mark.parametrize("causal", [False, True])
def test_forward_and_backward_match_fp64(implementation, causal):
    q, k, v = make(grad=True)
    sinks = torch.randn(4, dtype=torch.float32, requires_grad=True)
    out = at.attention(q, k, v, implementation=implementation, causal=causal, sinks=sinks, window_left=5)
    qr, kr, vr, sr = (t.detach().double().requires_grad_() for t in (q, k, v, sinks))
    ref = reference(qr, kr, vr, causal, sinks=sr, window_left=5)
    assert (out.double() - ref).abs().max().item() < 1e-5
    dout = torch.randn_like(out)
    out.backward(dout)
    ref.backward(dout.double())
    for got, want in ((q.grad, qr.grad), (k.grad, kr.grad), (v.grad, vr.grad), (sinks.grad, sr.grad)):
        assert (got.double() - want).abs().max().item() < 1e-4


def test_lse_is_returned_and_not_differentiable():
    q, k, v = make(grad=True)
    out, lse = at.attention(q, k, v, implementation="sdpa", return_lse=True)
    assert lse.shape == (2, 4, 7) and lse.dtype == torch.float32 and not lse.requires_grad
    s = torch.einsum("bqhd,bkhd->bhqk", q.double(), k.double().repeat_interleave(2, 2)) / 4.0
    assert (lse.double() - torch.logsumexp(s, -1)).abs().max().item() < 1e-4
    # Inference calls take other paths (no autograd node; no LSE unless asked): the same results.
    with torch.no_grad():
        out_ng, lse_ng = at.attention(q, k, v, implementation="sdpa", return_lse=True)
        out_only = at.attention(q, k, v, implementation="sdpa")
    for got, want in ((out_ng, out), (lse_ng, lse), (out_only, out)):
        assert (got - want.detach()).abs().max().item() < 1e-6
    # With return_lse the autograd node has two outputs (lse not differentiable); without, one.
    out.sum().backward()
    with_lse = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    at.attention(q, k, v, implementation="sdpa").sum().backward()
    for t, want in zip((q, k, v), with_lse):
        assert want.abs().max().item() > 0 and (t.grad - want).abs().max().item() < 1e-6


def test_opcheck():
    q, k, v = make(grad=True)
    sinks = torch.randn(4, requires_grad=True)
    args = (q, k, v, sinks, "sdpa", 0.25, True, -1, -1, 0.0)
    torch.library.opcheck(torch.ops.attnrt.forward.default, args)
    torch.library.opcheck(torch.ops.attnrt.forward.default, (q, k, v, None, "eager", 0.25, False, 3, 0, 0.0))
    out, lse = torch.ops.attnrt.forward(*args)
    dout = torch.randn_like(out)
    torch.library.opcheck(torch.ops.attnrt.backward.default,
                          (dout, q.detach(), k.detach(), v.detach(), out.detach(), lse, sinks.detach(), "sdpa", 0.25,
                           True, -1, -1, 0.0))


@pytest.mark.filterwarnings("ignore:Input #:UserWarning")
def test_gradcheck_fp32():
    # The plugin ABI has no fp64 (fp32, fp16, bf16), so gradcheck runs in fp32: central
    # differences with eps 1e-3 against the analytic backward, to fp32-sized tolerances.
    q, k, v = make(b=1, sq=5, sk=6, h=2, hkv=1, d=8, grad=True, seed=3)
    sinks = torch.randn(2, requires_grad=True)
    for implementation in ("eager", "sdpa"):
        assert torch.autograd.gradcheck(
            lambda q, k, v, s: at.attention(q, k, v, implementation=implementation, causal=True, sinks=s),
            (q, k, v, sinks), eps=1e-3, atol=2e-3, rtol=2e-3, fast_mode=False)


def test_unsupported_argument_raises_with_its_reason():
    q, k, v = make(dtype=torch.float64)
    with pytest.raises(attnrt.UnsupportedError, match="float64"):
        at.attention(q, k, v)


class Block(torch.nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x, implementation="sdpa"):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, -1).unbind(2)
        if implementation == "torch":
            o = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True).transpose(1, 2)
        else:
            o = at.attention(q, k, v, implementation=implementation, causal=True)
        return self.proj(o.reshape(b, s, -1))


def test_torch_compile_fullgraph():
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(2, 12, 32, requires_grad=True)
    compiled = torch.compile(block, fullgraph=True)
    y = compiled(x)
    y_ref = block(x, implementation="torch")
    assert (y - y_ref).abs().max().item() < 1e-5
    y.sum().backward()
    gx = x.grad.clone()
    x.grad = None
    y_ref.sum().backward()
    assert (gx - x.grad).abs().max().item() < 1e-5


def test_autocast_casts_inputs_as_for_torch_sdpa():
    # A model under autocast hands over q and k in float32 (after RoPE) and v in bfloat16 (out of a
    # linear layer); torch's SDPA casts all three to the autocast dtype, and so does attnrt.
    # seqlen_q = seqlen_k: torch's is_causal is top-left aligned, the ABI's bottom-right.
    q, k, v = make(sq=9, sk=9, grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = at.attention(q, k, v.bfloat16(), implementation="sdpa", causal=True)
        ref = torch.nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.bfloat16().transpose(1, 2), is_causal=True,
            enable_gqa=True).transpose(1, 2)
    assert out.dtype == torch.bfloat16 and ref.dtype == torch.bfloat16
    assert (out.float() - reference(q, k, v, True).float()).abs().max() < 3e-2
    assert (out.float() - ref.float()).abs().max() < 3e-2
    out.float().sum().backward()
    assert q.grad.dtype == torch.float32 and torch.isfinite(q.grad).all()


def test_eager_calls_skip_the_dispatcher_and_match_the_op():
    # attention() runs the op's implementation directly in eager mode (the dispatcher's Python
    # path is a third of a small call's host time): same outputs and gradients, bit for bit.
    q, k, v = make(grad=True)
    sinks = torch.randn(4, requires_grad=True)
    args = ("sdpa", 0.25, True, 3, -1, 0.0)
    out = at.attention(q, k, v, implementation="sdpa", softmax_scale=0.25, causal=True, window_left=3, sinks=sinks)
    out_op, _ = torch.ops.attnrt.forward(q, k, v, sinks, *args)
    assert torch.equal(out, out_op)
    dout = torch.randn_like(out)
    grads = torch.autograd.grad(out, (q, k, v, sinks), dout)
    grads_op = torch.autograd.grad(out_op, (q, k, v, sinks), dout)
    for got, want in zip(grads, grads_op):
        assert torch.equal(got, want)
    with torch.no_grad():
        assert at.attention(q, k, v, implementation="sdpa").grad_fn is None


def test_dispatch_modes_and_subclasses_see_the_op():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Record(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    q, k, v = make(grad=True)
    with Record() as rec:
        out = at.attention(q, k, v, implementation="eager", causal=True)
        out.sum().backward()
    assert "attnrt.forward.default" in rec.ops and "attnrt.backward.default" in rec.ops
    assert (out.detach().double() - reference(q.detach(), k.detach(), v.detach(), True)).abs().max() < 1e-5
    # Fake tensors (shape propagation without data) reach the op's fake implementation.
    from torch._subclasses.fake_tensor import FakeTensorMode
    plain = [t.detach() for t in (q, k, v)]
    with FakeTensorMode() as mode:
        fq, fk, fv = (mode.from_tensor(t) for t in plain)
        fout = at.attention(fq, fk, fv, implementation="eager")
    assert tuple(fout.shape) == tuple(q.shape)


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_torch_func_grad_and_vjp_match_the_fp64_reference(implementation):
    # torch.func.grad and vjp run attention through an autograd.Function with a separate
    # setup_context (the custom op's generated one is refused by functorch); gradients are
    # checked against the fp64 reference's, also when the vjp function runs after the transform.
    q, k, v = make()
    sinks = torch.randn(4)

    def loss(q, k, sinks):
        return (at.attention(q, k, v, implementation=implementation, causal=True, sinks=sinks) ** 2).sum()

    gq, gk, gs = torch.func.grad(loss, argnums=(0, 1, 2))(q, k, sinks)
    qr, kr, sr = (t.double().requires_grad_() for t in (q, k, sinks))
    (reference(qr, kr, v, True, sinks=sr) ** 2).sum().backward()
    for got, want in ((gq, qr.grad), (gk, kr.grad), (gs, sr.grad)):
        assert (got.double() - want).abs().max().item() < 1e-4

    out, vjp_fn = torch.func.vjp(lambda q: at.attention(q, k, v, implementation=implementation), q)
    dout = torch.randn_like(out)
    (gq_vjp,) = vjp_fn(dout)
    qr = q.double().requires_grad_()
    reference(qr, k, v, False).backward(dout.double())
    assert (gq_vjp.double() - qr.grad).abs().max().item() < 1e-4


def test_vmap_forward_loops_and_a_batched_backward_is_refused():
    q, k, v = make()
    batch = torch.stack([q, 2 * q])
    out = torch.func.vmap(lambda q: at.attention(q, k, v, implementation="eager"))(batch)
    for i in range(2):
        assert (out[i].double() - reference(batch[i], k, v, False)).abs().max().item() < 1e-5
    with pytest.raises(NotImplementedError, match="backward has no vmap rule"):
        torch.func.jacrev(lambda q: at.attention(q, k, v, implementation="eager")[0, 0, 0, :3])(q)
