"""attnrt.torch.flex_attention on a GPU under CUDA graphs (issue 15): a forward (and a forward +
backward) captured with a block mask and replayed gives the eager-mode results, and a block mask
and aux tensor rewritten in place between replays are what the next replay computes with, as
PyTorch's captured flex_attention reads its BlockMask's tensors at each replay. At head_dim 64 the
plugin remembers its choice of tile height per block mask for eager calls (rows_choice.hpp); a
captured call must not, so the rewritten mask exercises the choice made on the GPU at replay.
Skipped without CUDA (CI has none); run on the GPU machine with the CUDA plugins installed beside
libattnrt (tools/gpu_stage_python.sh flex_attention_cuda)."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
import attnrt  # noqa: E402
import attnrt.torch as at  # noqa: E402

# Causal attention inside documents: aux0 [batch, seqlen] holds each position's document.
DOC_CAUSAL = "aux0(b, q_idx) == aux0(b, kv_idx) && q_idx >= kv_idx"


def make(b, h, s, d, seed, grad=False):
    # Drawn on the CPU: a CUDA generator's state is tied to graph capture.
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, h, s, d, generator=g).to("cuda", torch.bfloat16).requires_grad_(grad) for _ in range(3)]


def documents(b, s, cuts):
    """[b, s] int32 document ids, a new document at each cut (per sequence: cuts[i % len(cuts)])."""
    ids = torch.zeros(b, s, dtype=torch.int32)
    for i in range(b):
        for c in cuts[i % len(cuts)]:
            ids[i, c:] += 1
    return ids.cuda()


def block_mask(docs, s):
    return at.create_block_mask(DOC_CAUSAL, docs.shape[0], None, s, s, aux=(docs,))


def copy_mask(dst, src):
    """src's lists written into dst's tensors (same shapes), in place."""
    for f in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices", "q_num_blocks", "q_indices",
              "full_q_num_blocks", "full_q_indices"):
        a, b = getattr(dst, f), getattr(src, f)
        if a is not None:
            a.copy_(b)


def flex(q, k, v, bm, docs):
    return at.flex_attention(q, k, v, block_mask=bm, aux=(docs,))


def require_cuda_flex(q, k, v, bm, docs):
    try:
        flex(q, k, v, bm, docs)
    except attnrt.UnsupportedError as e:
        pytest.skip(f"no CUDA flex_attention here: {e}")


@pytest.mark.parametrize("head_dim", [64, 128])
def test_captured_forward_follows_a_mask_rewritten_between_replays(head_dim):
    b, h, s = 2, 4, 2048
    q, k, v = make(b, h, s, head_dim, seed=head_dim)
    # Long documents first (192-row tiles pay), then many short ones and a sparse second
    # sequence (the block mask's rows then share few blocks).
    docs = documents(b, s, [[700, 1500]])
    bm = block_mask(docs, s)
    require_cuda_flex(q, k, v, bm, docs)
    # Warm-up on a side stream (PyTorch's recipe), three calls: the plugin's eager calls
    # remember the first mask's tile height.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            want = flex(q, k, v, bm, docs)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        got = flex(q, k, v, bm, docs)
    for _ in range(2):
        got.zero_()
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(got, want), "a replay differs from the eager call it captured"

    # The same tensors rewritten: short documents, other cuts in each sequence.
    docs2 = documents(b, s, [list(range(96, s, 96)), [130, 131, 900, 1999]])
    bm2 = block_mask(docs2, s)
    want2 = flex(q, k, v, bm2, docs2)
    assert not torch.equal(want2, want)
    docs.copy_(docs2)
    copy_mask(bm, bm2)
    got.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(got, want2), "the replay did not follow the rewritten block mask"
    # Eager calls on the rewritten tensors may keep the first mask's remembered tile height until
    # the plugin checks it again (speed only): the same result up to the other height's rounding.
    again = flex(q, k, v, bm, docs)
    assert torch.allclose(again.float(), want2.float(), atol=1e-2, rtol=1e-2)


def test_captured_forward_and_backward_replay():
    b, h, s, d = 2, 4, 1024, 64
    q, k, v = make(b, h, s, d, seed=7, grad=True)
    docs = documents(b, s, [[300, 700]])
    bm = block_mask(docs, s)
    require_cuda_flex(q.detach(), k.detach(), v.detach(), bm, docs)
    dout = torch.randn(q.shape, generator=torch.Generator().manual_seed(9)).to(q)

    def step():
        out = flex(q, k, v, bm, docs)
        return (out, *torch.autograd.grad(out, (q, k, v), dout))

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        want = [t.detach().clone() for t in step()]
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        got = step()
    for _ in range(3):
        for t in got:
            t.zero_()
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(got[0], want[0]), "out"
        for name, a, w in zip(("dq", "dk", "dv"), got[1:], want[1:]):
            # dQ by atomics is not bit-reproducible.
            assert torch.allclose(a.float(), w.float(), atol=2e-2, rtol=1e-2), name
