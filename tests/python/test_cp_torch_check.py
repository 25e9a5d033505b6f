"""tests/gpu/cp_torch_check.py's comparison on the CPU: its check_case (the global inputs, the
zigzag shards through context_parallel_attention, the all_gather and unshard, the float32 math
reference per query head, torch's bf16 SDPA as the baseline, FlashAttention's rule) in a gloo
group of one rank, the ring's transport being the in-process one. Small shapes; a corrupted
result, a fallback to another backend and a refusal must each fail the case."""
import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")
import attnrt  # noqa: E402
import attnrt.torch as at  # noqa: E402
import torch.distributed as dist  # noqa: E402

_PATH = os.path.join(os.path.dirname(__file__), "..", "gpu", "cp_torch_check.py")
_spec = importlib.util.spec_from_file_location("cp_torch_check", _PATH)
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)


class Args:
    batch, heads, kv_heads, head_dim, layout, seed = 1, 8, 2, 32, "zigzag", 0


@pytest.fixture
def one_rank(monkeypatch):
    """A gloo group of one rank, and context_parallel_attention given its in-process transport
    (attnrt has no gloo transport); `wrap` changes what the ring returns."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    transport = attnrt.InProcessGroup(1).transport(0)
    ring = at.context_parallel_attention
    state = {"wrap": lambda out: out}

    def with_transport(*args, **kw):
        out, lse = ring(*args, transport=transport, **kw)
        return state["wrap"](out), lse

    monkeypatch.setattr(at, "context_parallel_attention", with_transport)
    yield state
    dist.destroy_process_group()


@pytest.mark.parametrize("causal", [False, True])
def test_the_ring_passes(one_rank, causal, capsys):
    assert check.check_case(Args, "sdpa", causal, 64, 0, 1, torch.device("cpu")) == (5, 0)
    table = capsys.readouterr().out
    assert table.count("PASS") == 5 and "attnrt backend sdpa" in table


def test_a_wrong_result_fails(one_rank, capsys):
    one_rank["wrap"] = lambda out: out * 1.05
    rows, failures = check.check_case(Args, "sdpa", True, 64, 0, 1, torch.device("cpu"))
    assert rows == 5 and failures >= 2  # out, and dq/dk/dv through the scaled output's gradient
    assert "out   " in capsys.readouterr().out


def test_a_fallback_and_a_refusal_fail(one_rank, capsys):
    # flash_attention_2 is a CUDA plugin: on the CPU its name resolves to a fallback.
    assert check.check_case(Args, "flash_attention_2", True, 64, 0, 1, torch.device("cpu")) == (1, 1)
    assert "flash_attention_2 resolved to sdpa" in capsys.readouterr().out

    def refuse(out):
        raise attnrt.UnsupportedError("context parallel: no BlockOps for this device yet")

    one_rank["wrap"] = refuse
    assert check.check_case(Args, "sdpa", True, 64, 0, 1, torch.device("cpu")) == (1, 1)
    assert "rank 0: UnsupportedError: context parallel: no BlockOps" in capsys.readouterr().out


@pytest.mark.parametrize("causal", [False, True])
def test_the_varlen_ring_passes(one_rank, causal, capsys):
    # A packed batch of three sequences: the shards cut per sequence, the reference and torch's
    # bf16 SDPA per sequence, compared on the packed tensors.
    assert check.check_varlen_case(Args, "sdpa", causal, [16, 48, 32], 0, 1, torch.device("cpu")) == (5, 0)
    table = capsys.readouterr().out
    assert table.count("PASS") == 5 and f"sdpa {'causal' if causal else 'full'} 16+48+32" in table
    assert "attnrt backend sdpa; torch bf16 SDPA per sequence" in table


def test_a_wrong_varlen_result_fails(one_rank, capsys):
    # Rows of the output swapped between the first two sequences: each compared row is another
    # sequence's, which the per-sequence reference must see.
    one_rank["wrap"] = lambda out: torch.cat((out[16:32], out[:16], out[32:]))
    rows, failures = check.check_varlen_case(Args, "sdpa", True, [16, 16, 32], 0, 1, torch.device("cpu"))
    assert rows == 5 and failures >= 1
    assert "FAIL" in capsys.readouterr().out
