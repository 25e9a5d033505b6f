"""attnrt.hf on transformers' own gpt-oss attention (GptOssAttention: sinks, sliding window, GQA)
on the CPU: tests/gpu/hf_gptoss_check.py's comparisons (float64 eager reference, FlashAttention's
rule against eager in the same dtype) with attnrt's sdpa, small shapes; a bf16 sinks parameter;
the CUDA default stream's DLPack handle."""
import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers.models.gpt_oss")
import attnrt  # noqa: E402
import attnrt.hf  # noqa: E402

_PATH = os.path.join(os.path.dirname(__file__), "..", "gpu", "hf_gptoss_check.py")
_spec = importlib.util.spec_from_file_location("hf_gptoss_check", _PATH)
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)


class Args:
    heads, kv_heads, hidden, window = 4, 2, 96, 8


@pytest.mark.parametrize("layer_idx", [0, 1], ids=["sliding_window", "full"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_gptoss_attention_matches_transformers_eager(layer_idx, dtype):
    cfg = check.make_config(Args)
    m64 = check.make_module(cfg, layer_idx, 7, "cpu").double()
    assert (m64.sliding_window is not None) == (layer_idx == 0)
    name = attnrt.hf.register("sdpa")
    ck = check.Checker()
    gen = torch.Generator().manual_seed(3)
    for seqlen in (1, 9, 21):  # shorter than, and past, the 8-key window
        check.attn_level(cfg, m64, dtype, name, "sdpa", 2, seqlen, ck, "cpu", gen)
        check.module_level(cfg, m64, dtype, name, 2, seqlen, ck, "cpu", gen)
    assert ck.rows == 3 * 9 and ck.failures == 0
    assert ck.backends == {"sdpa"}


def test_bf16_sinks_parameter_is_converted_and_its_gradient_returned():
    # from_pretrained(torch_dtype=bfloat16) leaves gpt-oss's sinks in bf16; the ABI takes float32.
    cfg = check.make_config(Args)
    m = check.make_module(cfg, 0, 1, "cpu").to(torch.bfloat16)
    assert m.sinks.dtype == torch.bfloat16
    x = torch.randn(1, 12, Args.hidden, dtype=torch.bfloat16)
    rotary = check.gptoss.GptOssRotaryEmbedding(cfg)
    pos = torch.arange(12)[None]
    outs, grads = [], []
    for impl in ("eager", attnrt.hf.register("sdpa")):
        m.zero_grad(set_to_none=True)
        mask = check.mask_for(cfg, m, impl, x, pos)
        cfg._attn_implementation = impl
        y, _ = m(x, rotary(x, pos), mask)
        y.float().square().sum().backward()
        outs.append(y.float())
        grads.append(m.sinks.grad)
    assert grads[1].dtype == torch.bfloat16
    # eager runs its softmax in bf16 here (sinks and scores both bf16): a loose bound
    assert (outs[0] - outs[1]).abs().max() <= 0.05 * outs[0].abs().max()
    assert (grads[0].float() - grads[1].float()).abs().max() <= 0.05 * grads[0].float().abs().max()


class _FakeCudaTensor:
    def __init__(self):
        self.streams = []

    def __dlpack_device__(self):
        return 2, 0  # kDLCUDA

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return "capsule"


def test_cuda_default_stream_handle_is_dlpacks_legacy_stream():
    # torch.cuda.current_stream().cuda_stream is 0 on the default stream; torch's __dlpack__
    # refuses 0 ("unsupported stream on CUDA"), DLPack's name for that stream is 1.
    t = _FakeCudaTensor()
    attnrt.dlpack(t, 0)
    attnrt.dlpack(t, 0x7F00)
    assert t.streams == [1, 0x7F00]
