"""attnrt.torch.flex_attention and create_block_mask (issue 15) on the CPU: forward and gradients
against an fp64 reference that materializes the scores and applies the same mods written as
Python (and, for the forward, against PyTorch's own eager flex_attention where it runs);
create_block_mask's lists against a classification of every block; the errors. A CUDA case at
the end is skipped without a GPU and a CUDA flex_attention plugin."""
import math

import pytest

torch = pytest.importorskip("torch")
import attnrt  # noqa: E402
import attnrt.torch as at  # noqa: E402

B, HQ, HKV, SQ, SK, D = 2, 4, 2, 37, 45, 16  # GQA, odd lengths, blocks that do not divide them


def grid(b, h, sq, sk):
    """Index tensors broadcasting to [b, h, sq, sk], as the mods' (b, h, q_idx, kv_idx)."""
    return (torch.arange(b)[:, None, None, None], torch.arange(h)[None, :, None, None],
            torch.arange(sq)[None, None, :, None], torch.arange(sk)[None, None, None, :])


def reference(q, k, v, score_mod=None, mask_mod=None, scale=None):
    """fp64 flex attention in [batch, heads, seqlen, dim]: out and lse (natural log), every
    score materialized; a row with no visible key gives out 0 and lse -inf."""
    q, k, v = (t.double() for t in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(-1, -2) * scale
    idx = grid(q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    if score_mod is not None:
        s = score_mod(s, *idx)
    if mask_mod is not None:
        s = s.masked_fill(~mask_mod(*idx).expand(s.shape), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None].masked_fill(torch.isinf(lse[..., None]), 0.0))
    return p @ v, lse


def make(b=B, hq=HQ, hkv=HKV, sq=SQ, sk=SK, d=D, dtype=torch.float32, grad=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, hq, sq, d, generator=g, dtype=dtype)
    k = torch.randn(b, hkv, sk, d, generator=g, dtype=dtype)
    v = torch.randn(b, hkv, sk, d, generator=g, dtype=dtype)
    return [t.requires_grad_(grad) for t in (q, k, v)]


SLOPES = torch.tensor([0.5, 0.25, 0.125, 0.0625])  # ALiBi's per-head slopes for 4 heads
DOCS = torch.tensor([[0] * 10 + [1] * 20 + [2] * 15, [0] * 25 + [1] * 20], dtype=torch.int32)  # [batch, keys]


# Each case: the C++ mods and their Python twins (torch ops on the index tensors; they also run
# under PyTorch's own flex_attention), with the aux tensors and scalars both read.
CASES = {
    "causal": dict(mask_mod="q_idx >= kv_idx", py_mask=lambda b, h, i, j: i >= j),
    "sliding_window": dict(mask_mod="q_idx >= kv_idx && q_idx - kv_idx <= 8",
                           py_mask=lambda b, h, i, j: (i >= j) & (i - j <= 8)),
    "alibi": dict(score_mod="score + aux0(h) * (kv_idx - q_idx)", score_mod_grad="1.0f", aux=(SLOPES,),
                  py_score=lambda s, b, h, i, j: s + SLOPES.double()[h] * (j - i), mask_mod="q_idx >= kv_idx",
                  py_mask=lambda b, h, i, j: i >= j),
    "softcap": dict(score_mod="scalar0 * tanhf(score / scalar0)",
                    score_mod_grad="const float t = tanhf(score / scalar0); return 1.0f - t * t;", scalars=(1.5,),
                    py_score=lambda s, b, h, i, j: 1.5 * torch.tanh(s / 1.5)),
    "document_causal": dict(mask_mod="aux0(b, q_idx) == aux0(b, kv_idx) && q_idx >= kv_idx", aux=(DOCS,),
                            py_mask=lambda b, h, i, j: (DOCS[b, i] == DOCS[b, j]) & (i >= j), sq=SK),
    "prefix_lm_scalar": dict(mask_mod="kv_idx < (int)scalar0 || q_idx >= kv_idx", scalars=(7.0,),
                             py_mask=lambda b, h, i, j: (j < 7) | (i >= j)),
    "rows_without_keys": dict(mask_mod="kv_idx >= 10 && kv_idx <= q_idx",
                              py_mask=lambda b, h, i, j: (j >= 10) & (j <= i)),
}


def run(case, q, k, v, **kw):
    c = CASES[case]
    args = {name: c[name] for name in ("score_mod", "score_mod_grad", "mask_mod", "aux", "scalars") if name in c}
    args.update(kw)
    return at.flex_attention(q, k, v, enable_gqa=q.shape[1] != k.shape[1], **args)


def close(a, b, what, tol=1e-4):
    a, b = a.double(), b.double()
    finite = torch.isfinite(b)
    assert torch.equal(torch.isfinite(a), finite), f"{what}: -inf at other places"
    err = (a[finite] - b[finite]).abs().max().item() if finite.any() else 0.0
    assert err <= tol * max(1.0, b[finite].abs().max().item()), f"{what}: max error {err}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_forward_and_gradients_match_the_fp64_reference(case):
    c = CASES[case]
    q, k, v = make(sq=c.get("sq", SQ))
    out, lse = run(case, q, k, v, return_lse=True)
    assert out.shape == (B, HQ, q.shape[2], D) and out.dtype == q.dtype and out.is_contiguous()
    assert lse.shape == (B, HQ, q.shape[2]) and lse.dtype == torch.float32
    ref_in = [t.detach().double().requires_grad_() for t in (q, k, v)]
    ref_out, ref_lse = reference(*ref_in, c.get("py_score"), c.get("py_mask"))
    close(out, ref_out, "out")
    close(lse, ref_lse, "lse")
    dout = torch.randn(out.shape, generator=torch.Generator().manual_seed(3))
    grads = torch.autograd.grad(out, (q, k, v), dout)
    ref_grads = torch.autograd.grad(ref_out, ref_in, dout.double())
    for name, a, b in zip(("dq", "dk", "dv"), grads, ref_grads):
        close(a, b, name)


def pytorch_flex():
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    if not hasattr(flex, "flex_attention"):
        pytest.skip("this torch has no flex_attention")
    return flex


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.filterwarnings("ignore")
def test_forward_matches_pytorch_flex_attention(case):
    # PyTorch's eager flex_attention (unfused, CPU; no backward there) on the same fp64 inputs.
    flex = pytorch_flex()
    c = CASES[case]
    q, k, v = make(sq=c.get("sq", SQ), grad=False)
    out, lse = run(case, q, k, v, return_lse=True)
    py_score, py_mask = c.get("py_score"), c.get("py_mask")
    block_mask = None
    if py_mask is not None:
        block_mask = flex.create_block_mask(lambda b, h, i, j: py_mask(b, h, i, j), B, HQ, q.shape[2], SK,
                                            device="cpu")
    try:
        theirs, their_lse = flex.flex_attention(q.double(), k.double(), v.double(), score_mod=py_score,
                                                block_mask=block_mask, enable_gqa=True, return_lse=True)
    except Exception as e:  # a torch whose eager flex does not run here
        pytest.skip(f"PyTorch's flex_attention does not run on this CPU: {e}")
    close(out, theirs, "out")
    close(lse, their_lse, "lse")


def test_views_in_either_layout_give_the_same_result():
    # q/k/v as transposed views of [batch, seqlen, heads, dim] (a model's projections), and with
    # a non-contiguous last dimension: the same result as contiguous inputs.
    q, k, v = make(grad=False)
    want = run("alibi", q, k, v)
    views = [t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v)]
    assert not views[0].is_contiguous()
    torch.testing.assert_close(run("alibi", *views), want, rtol=0, atol=0)
    strided = [torch.stack([t, t], dim=-1)[..., 0] for t in (q, k, v)]
    assert strided[0].stride(-1) == 2
    torch.testing.assert_close(run("alibi", *strided), want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_types(dtype):
    q, k, v = make(dtype=dtype, grad=False)
    out = run("causal", q, k, v, scale=0.3)
    ref, _ = reference(q, k, v, mask_mod=CASES["causal"]["py_mask"], scale=0.3)
    assert out.dtype == dtype
    close(out, ref, "out", tol=2e-2)


def test_gqa_needs_enable_gqa_as_in_pytorch():
    q, k, v = make(grad=False)
    with pytest.raises(attnrt.InvalidArgumentError, match="enable_gqa"):
        at.flex_attention(q, k, v)
    q3 = torch.randn(B, 3, SQ, D)
    with pytest.raises(ValueError, match="multiple"):
        at.flex_attention(q3, k, v, enable_gqa=True)


def test_no_mods_is_plain_attention():
    q, k, v = make(grad=False)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    close(at.flex_attention(q, k, v, enable_gqa=True), ref, "out")


# ---------------------------------------------------------------- create_block_mask


def classify(py_mask, bm, hm, sq, sk, qb, kb):
    """Every block by every pair of it: 0 empty, 1 partial, 2 full; [bm, hm, MQ, MK]."""
    mq, mk = -(-sq // qb), -(-sk // kb)
    visible = py_mask(*grid(bm, hm, sq, sk)).expand(bm, hm, sq, sk) if py_mask else torch.ones(bm, hm, sq, sk,
                                                                                                   dtype=torch.bool)
    state = torch.zeros(bm, hm, mq, mk, dtype=torch.int64)
    for r in range(mq):
        for c in range(mk):
            block = visible[:, :, r * qb:(r + 1) * qb, c * kb:(c + 1) * kb]
            state[:, :, r, c] = torch.where(block.all(-1).all(-1), 2, torch.where(block.any(-1).any(-1), 1, 0))
    return state


def lists(state, want):
    """kv_num_blocks / kv_indices as create_block_mask writes them: the columns of each row whose
    state is `want`, ascending, zeros after."""
    num = (state == want).sum(-1).to(torch.int32)
    idx = torch.zeros(state.shape, dtype=torch.int32)
    for pos in torch.nonzero(state == want).tolist():
        *row, col = pos
        n = int((state[tuple(row)][:col] == want).sum())
        idx[tuple(row) + (n,)] = col
    return num, idx


MASK_CASES = {
    "causal": ("q_idx >= kv_idx", lambda b, h, i, j: i >= j, (), ()),
    "sliding_window_per_head": ("kv_idx <= q_idx && q_idx - kv_idx < 5 + 7 * h",
                                lambda b, h, i, j: (j <= i) & (i - j < 5 + 7 * h), (), ()),
    "document": ("aux0(b, q_idx) == aux0(b, kv_idx)", lambda b, h, i, j: DOCS[b, i] == DOCS[b, j], (DOCS,), ()),
    "prefix_lm_scalar": ("kv_idx < (int)scalar0 || q_idx >= kv_idx", lambda b, h, i, j: (j < 13) | (i >= j), (),
                         (13.0,)),
    "nothing_visible": ("false", lambda b, h, i, j: torch.zeros_like(i + j, dtype=torch.bool), (), ()),
    "no_mask_mod": (None, None, (), ()),
}


@pytest.mark.parametrize("case", sorted(MASK_CASES))
@pytest.mark.parametrize("b, h", [(None, None), (2, 3), (2, None), (None, 3)])
@pytest.mark.parametrize("block_size", [8, (16, 4), (4, 32), 128])
def test_create_block_mask_lists_every_block_as_classified(case, b, h, block_size):
    source, py_mask, aux, scalars = MASK_CASES[case]
    sq, sk = 45, 45
    if b is None and case == "document":
        b = 2  # the document ids differ per sequence
    bm = at.create_block_mask(source, b, h, sq, sk, device="cpu", BLOCK_SIZE=block_size, aux=aux, scalars=scalars)
    qb, kb = (block_size, block_size) if isinstance(block_size, int) else block_size
    assert bm.BLOCK_SIZE == (qb, kb) and bm.seq_lengths == (sq, sk) and bm.mask_mod == source
    assert bm.shape == (b or 1, h or 1, sq, sk)
    state = classify(py_mask, b or 1, h or 1, sq, sk, qb, kb)
    for prefix, kv_state in (("", state), ("q_", state.transpose(-1, -2))):
        stem = "kv_" if prefix == "" else "q_"
        for full, want in (("", 1), ("full_", 2)):
            num, idx = lists(kv_state, want)
            assert torch.equal(getattr(bm, f"{full}{stem}num_blocks"), num), f"{full}{stem}num_blocks"
            assert torch.equal(getattr(bm, f"{full}{stem}indices"), idx), f"{full}{stem}indices"
    dense = (state > 0).to(torch.int32)
    assert torch.equal(bm.to_dense(), dense)
    assert bm.sparsity() == pytest.approx(100.0 * (1 - dense.float().mean().item()))


@pytest.mark.parametrize("case", ["causal", "sliding_window_per_head", "prefix_lm_scalar"])
def test_flex_attention_with_the_block_mask_equals_without(case):
    source, py_mask, aux, scalars = MASK_CASES[case]
    q, k, v = make(hq=3, hkv=1, sq=45, sk=45)
    bm = at.create_block_mask(source, None, 3, 45, 45, device="cpu", BLOCK_SIZE=8, scalars=scalars)
    assert 0 < bm.sparsity() < 100
    dout = torch.randn(q.shape, generator=torch.Generator().manual_seed(4))
    without = at.flex_attention(q, k, v, mask_mod=source, scalars=scalars, enable_gqa=True)
    with_mask = at.flex_attention(q, k, v, block_mask=bm, enable_gqa=True)  # the mask's mask_mod and scalars
    torch.testing.assert_close(with_mask, without, rtol=1e-5, atol=1e-6)
    for a, b in zip(torch.autograd.grad(with_mask, (q, k, v), dout), torch.autograd.grad(without, (q, k, v), dout)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    ref, _ = reference(q, k, v, mask_mod=py_mask)
    close(with_mask, ref, "out")


def test_block_mask_aux_with_a_score_mod_aux_after_it():
    # The mask's mod reads aux0 (document ids); the score_mod's slopes follow as aux1.
    q, k, v = make(sq=SK)
    bm = at.create_block_mask("aux0(b, q_idx) == aux0(b, kv_idx)", B, None, SK, SK, device="cpu", BLOCK_SIZE=8,
                              aux=(DOCS,))
    out = at.flex_attention(q, k, v, block_mask=bm, score_mod="score + aux1(h) * (kv_idx - q_idx)",
                            score_mod_grad="1.0f", aux=(DOCS, SLOPES), enable_gqa=True)
    ref, _ = reference(q, k, v, lambda s, b, h, i, j: s + SLOPES.double()[h] * (j - i),
                       lambda b, h, i, j: DOCS[b, i] == DOCS[b, j])
    close(out, ref, "out")
    out.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()
    with pytest.raises(attnrt.InvalidArgumentError, match="block_mask.aux"):
        at.flex_attention(q, k, v, block_mask=bm, aux=(SLOPES,), enable_gqa=True)


# ---------------------------------------------------------------- errors


def test_bad_inputs_name_the_tensor_and_its_shape():
    q, k, v = make(grad=False)
    with pytest.raises(attnrt.UnsupportedError, match=r"query dtype torch.float64 \(shape \(2, 4, 37, 16\)\)"):
        at.flex_attention(q.double(), k.double(), v.double(), enable_gqa=True)
    with pytest.raises(attnrt.InvalidArgumentError, match=r"key dtype torch.float16 \(shape \(2, 2, 45, 16\)\)"):
        at.flex_attention(q, k.half(), v, enable_gqa=True)
    with pytest.raises(ValueError, match=r"query must be \[batch, heads, seqlen, head_dim\].*\(4, 37, 16\)"):
        at.flex_attention(q[0], k, v, enable_gqa=True)
    with pytest.raises(ValueError, match=r"same head_dim.*key \(2, 2, 45, 8\)"):
        at.flex_attention(q, k[..., :8], v, enable_gqa=True)
    with pytest.raises(ValueError, match=r"same heads and seqlen.*value \(2, 2, 44, 16\)"):
        at.flex_attention(q, k, v[:, :, :44], enable_gqa=True)
    with pytest.raises(ValueError, match="same batch size"):
        at.flex_attention(q, k[:1], v[:1], enable_gqa=True)
    with pytest.raises(attnrt.InvalidArgumentError, match=r"aux\[0\].*float32, got torch.float64"):
        at.flex_attention(q, k, v, score_mod="score + aux0(h)", aux=(SLOPES.double(),), enable_gqa=True)
    with pytest.raises(TypeError, match="C\\+\\+ source text"):
        at.flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: s, enable_gqa=True)
    with pytest.raises(NotImplementedError, match="aux0.detach"):
        at.flex_attention(q, k, v, score_mod="score + aux0(h)", aux=(SLOPES.clone().requires_grad_(),),
                          enable_gqa=True)


def test_block_mask_of_another_size_is_refused():
    q, k, v = make(grad=False)
    bm = at.create_block_mask("q_idx >= kv_idx", None, None, SQ, SK + 1, device="cpu")
    with pytest.raises(attnrt.InvalidArgumentError, match=r"block_mask was made for .*\(37, 46\)"):
        at.flex_attention(q, k, v, block_mask=bm, enable_gqa=True)
    bm = at.create_block_mask("q_idx >= kv_idx", None, None, SQ, SK, device="cpu", BLOCK_SIZE=8)
    # A hand-made mask whose lists are cut short: the field is named, with both shapes.
    short = at.BlockMask(bm.kv_num_blocks[:, :, :2], bm.kv_indices[:, :, :2], None, None, None, None, None, None,
                         bm.BLOCK_SIZE, bm.mask_mod, bm.seq_lengths)
    with pytest.raises(attnrt.InvalidArgumentError, match=r"kv_num_blocks has shape \(1, 1, 2\), expected \(1, 1, 5\)"):
        at.flex_attention(q, k, v, block_mask=short, enable_gqa=True)


def test_a_mod_that_does_not_compile_raises_the_compilers_messages():
    q, k, v = make(grad=False)
    with pytest.raises(attnrt.Error) as e:
        at.flex_attention(q, k, v, mask_mod="q_idx >= kv_idy", enable_gqa=True)
    assert "mask_mod:1" in str(e.value) and "error" in str(e.value) and "kv_idy" in str(e.value)
    with pytest.raises(attnrt.Error) as e:
        at.create_block_mask("return q_idx >= undeclared_thing;", None, None, 16, 16, device="cpu")
    assert "mask_mod:1" in str(e.value) and "undeclared_thing" in str(e.value)


def test_an_aux_read_outside_its_shape_fails_the_call():
    q, k, v = make(grad=False)
    with pytest.raises(attnrt.InvalidArgumentError, match="aux"):
        at.flex_attention(q, k, v, mask_mod="aux0(kv_idx) >= 0", aux=(torch.zeros(3, dtype=torch.int32),),
                          enable_gqa=True)


def test_backward_through_a_score_mod_needs_score_mod_grad():
    q, k, v = make()
    out = at.flex_attention(q, k, v, score_mod="score * 2.0f", enable_gqa=True)  # the forward runs
    ref, _ = reference(q.detach(), k.detach(), v.detach(), lambda s, b, h, i, j: s * 2.0)
    close(out, ref, "out")
    with pytest.raises(NotImplementedError, match="score_mod_grad"):
        out.sum().backward()
    with torch.no_grad():
        at.flex_attention(q, k, v, score_mod="score * 2.0f", enable_gqa=True)  # no backward: fine


def test_gradients_that_are_not_supported_raise():
    q, k, v = make()
    out, lse = at.flex_attention(q, k, v, mask_mod="q_idx >= kv_idx", enable_gqa=True, return_lse=True)
    with pytest.raises(NotImplementedError, match="lse"):
        (out.sum() + lse.sum()).backward()
    out, lse = at.flex_attention(q, k, v, mask_mod="q_idx >= kv_idx", enable_gqa=True, return_lse=True)
    (dq,) = torch.autograd.grad(out.square().sum(), q, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable|double backward|does not require grad"):
        dq.sum().backward()


# ---------------------------------------------------------------- CUDA (skipped without a GPU)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("case", ["alibi", "softcap", "document_causal"])
def test_cuda_matches_the_fp64_reference(case):
    c = CASES[case]
    sq = 256 if case == "document_causal" else 192
    q, k, v = (t.detach().to("cuda", torch.bfloat16).requires_grad_() for t in make(sq=sq, sk=256, d=64))
    aux = tuple(a.cuda() for a in c.get("aux", ()))
    if case == "document_causal":
        docs = (torch.arange(256) // 50).to(torch.int32).repeat(B, 1)
        aux = (docs.cuda(),)
        c = dict(c, py_mask=lambda b, h, i, j: (docs[b, i] == docs[b, j]) & (i >= j))
    try:
        out = run(case, q, k, v, aux=aux)
    except attnrt.UnsupportedError as e:
        pytest.skip(f"no CUDA flex_attention here: {e}")
    ref_in = [t.detach().double().cpu().requires_grad_() for t in (q, k, v)]
    ref, _ = reference(*ref_in, c.get("py_score"), c.get("py_mask"))
    close(out.cpu(), ref, "out", tol=3e-2)
    dout = torch.randn(out.shape, generator=torch.Generator().manual_seed(3))
    grads = torch.autograd.grad(out, (q, k, v), dout.to(out))
    for name, a, b in zip(("dq", "dk", "dv"), grads, torch.autograd.grad(ref, ref_in, dout.double())):
        close(a.cpu(), b, name, tol=5e-2)
    if "mask_mod" in c:
        bm = at.create_block_mask(c["mask_mod"], B, None, sq, 256, device="cuda", aux=aux)
        out_masked = run(case, q, k, v, aux=aux, block_mask=bm)
        close(out_masked.cpu(), ref, "out with the block mask", tol=3e-2)
