#!/usr/bin/env python3
"""Hugging Face's own gpt-oss attention against attnrt's sink plugin (issue 14's independent check).

transformers' ``GptOssAttention`` (random weights, head_dim 64, GQA, ``sliding_window`` 128 on
the "sliding_attention" layer and full causal attention on the "full_attention" one, ``sinks`` a
float32 parameter of random values) runs three ways on the same inputs:
  reference  the module in float64 with transformers' eager attention (``eager_attention_forward``,
             its sink concatenation, the 4-D mask from transformers' own
             ``create_causal_mask`` / ``create_sliding_window_causal_mask``);
  torch      the module in the low-precision dtype (bf16/fp16, sinks kept float32), eager;
  attnrt     the same low-precision module with ``attn_implementation="attnrt:<plugin>"``
             (attnrt.hf; transformers' mask function gives it None, and ``sliding_window`` and
             ``s_aux`` reach the plugin as window_left = W - 1 and sinks).
Two levels: "attn" calls the attention functions directly on random q/k/v leaves [batch, heads,
seq, 64] (out, dq, dk, dv, dsinks by autograd); "module" runs the whole module (projections,
rotary, attention, o_proj) on random hidden states (output, d hidden_states, d sinks,
d q_proj.weight).

Tolerance (FlashAttention's rule, as the C++ GPU tests): attnrt's max |error| against the float64
reference is at most 2 x torch's max |error| (the same computation in the same dtype) + floor,
floor = 1e-3 * max(1, max |reference|) for bf16 and 2e-4 * max(1, max |reference|) for fp16. For
dsinks the baseline is the larger of torch's error and the error that the dtype's rounding of the
output alone causes (dsinks_h = -sum exp(sink_h - lse) rowsum(dO o O) computed in float64 from
attnrt's own stored O), as tests/gpu does. NaN never passes. Exit status 1 on any failure.

Usage: python3 tests/gpu/hf_gptoss_check.py [--device cuda] [--implementation sink]
(PYTHONPATH must reach the attnrt package; LD_LIBRARY_PATH its libattnrt and plugins.)
"""
from __future__ import annotations

import argparse
import inspect
import sys
import time

import torch
from transformers import GptOssConfig
from transformers import masking_utils
from transformers.models.gpt_oss import modeling_gpt_oss as gptoss

import attnrt
import attnrt.hf
import attnrt.torch as at

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
FLOOR = {torch.bfloat16: 1e-3, torch.float16: 2e-4, torch.float32: 1e-5}  # fp32: CPU plugins


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--implementation", default="sink", help="attnrt plugin name, alias or path")
    p.add_argument("--heads", type=int, default=64)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--hidden", type=int, default=2880, help="gpt-oss's hidden size")
    p.add_argument("--window", type=int, default=128, help="transformers' sliding_window (visible keys)")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seqlens", default="1,17,128,129,300,1000,2049")
    p.add_argument("--dtypes", default="bf16,fp16")
    p.add_argument("--levels", default="attn,module")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def make_config(a) -> GptOssConfig:
    return GptOssConfig(hidden_size=a.hidden, num_attention_heads=a.heads, num_key_value_heads=a.kv_heads,
                        head_dim=64, sliding_window=a.window, num_hidden_layers=2, attention_bias=True,
                        layer_types=["sliding_attention", "full_attention"], attention_dropout=0.0)


def make_module(cfg, layer_idx, seed, device) -> gptoss.GptOssAttention:
    torch.manual_seed(seed)
    m = gptoss.GptOssAttention(cfg, layer_idx)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name == "sinks":
                # Sinks around the scores' scale and above it, different per head: some rows give
                # the sink most of the mass, others almost none.
                p.copy_(torch.randn_like(p) * 2.0 + 0.5)
            elif name.endswith("bias"):
                p.copy_(torch.randn_like(p) * 0.1)
            else:
                # q and k entries of about unit size, so scores * scaling spread over a few units
                p.copy_(torch.randn_like(p) * (1.5 / cfg.hidden_size ** 0.5))
    return m.to(device)


def low_precision(m64, dtype):
    m = gptoss.GptOssAttention(m64.config, m64.layer_idx).to(m64.sinks.device)
    m.load_state_dict(m64.state_dict())
    m.to(dtype)
    m.sinks.data = m.sinks.data.float()  # gpt-oss's sinks as a float32 parameter
    return m


def mask_for(cfg, m, implementation, embeds, position_ids):
    """transformers' own mask for this layer type and attention implementation."""
    cfg._attn_implementation = implementation
    fn = (masking_utils.create_sliding_window_causal_mask if m.sliding_window is not None
          else masking_utils.create_causal_mask)
    kwargs = dict(config=cfg, inputs_embeds=embeds, attention_mask=None, past_key_values=None,
                  position_ids=position_ids)
    if "cache_position" in inspect.signature(fn).parameters:  # older transformers
        kwargs["cache_position"] = position_ids[0]
    return fn(**kwargs)


def maxerr(x, ref):
    return (x.double() - ref).abs().max().item()


class Checker:
    def __init__(self):
        self.failures = 0
        self.rows = 0
        self.backends = set()

    def check(self, case, what, got, torch_err, ref, dtype, extra_baseline=0.0):
        err = maxerr(got, ref)
        base = max(torch_err, extra_baseline)
        floor = FLOOR[dtype] * max(1.0, ref.abs().max().item())
        ok = err <= 2 * base + floor  # False for NaN
        self.rows += 1
        self.failures += not ok
        print(f"{case:<34} {what:<8} attnrt {err:10.3e}  torch {torch_err:10.3e}"
              f"{'  (o-rounding ' + format(extra_baseline, '.3e') + ')' if extra_baseline else '':<26}"
              f" floor {floor:8.1e}  {'PASS' if ok else 'FAIL'}")


def dsinks_from_output(out, dout, lse, sinks):
    """float64 dsinks_h = -sum_{b,i} exp(sink_h - lse) * rowsum(dO o O) from a given O
    ([b, s, h, d]), dO and the reference lse [b, h, s]."""
    d = (dout.double() * out.double()).sum(-1).transpose(1, 2)  # [b, h, s]
    return -(torch.exp(sinks.double()[None, :, None] - lse) * d).sum((0, 2))


def reference_lse(q, k, sinks, scaling, window, groups):
    """float64 lse [b, h, s] of the scores and the sink (causal, window = visible keys or None)."""
    k = k.repeat_interleave(groups, dim=1)
    s = torch.matmul(q.double(), k.double().transpose(2, 3)) * scaling
    n = q.shape[2]
    i = torch.arange(n, device=q.device)[:, None]
    j = torch.arange(n, device=q.device)[None, :]
    hidden = j > i
    if window is not None:
        hidden |= j <= i - window
    s = s.masked_fill(hidden, float("-inf"))
    s = torch.cat([s, sinks.double()[None, :, None, None].expand(s.shape[0], -1, n, 1)], dim=-1)
    return torch.logsumexp(s, dim=-1)


def attn_level(cfg, m64, dtype, name, value, batch, seqlen, ck, device, gen):
    """The attention functions alone: transformers' eager_attention_forward vs attnrt.hf's."""
    h, hkv, d = cfg.num_attention_heads, cfg.num_key_value_heads, 64
    q0 = torch.randn(batch, h, seqlen, d, device=device, generator=gen)
    k0 = torch.randn(batch, hkv, seqlen, d, device=device, generator=gen)
    v0 = torch.randn(batch, hkv, seqlen, d, device=device, generator=gen)
    do0 = torch.randn(batch, seqlen, h, d, device=device, generator=gen)
    # All three runs see the same low-precision values (the reference upcasts them exactly).
    q0, k0, v0, do0 = (t.to(dtype) for t in (q0, k0, v0, do0))
    mlp = low_precision(m64, dtype)
    kind = "window" if m64.sliding_window else "full"
    case = f"attn {kind} {str(dtype)[6:]} b{batch} s{seqlen}"
    results = {}
    for label, module, wdtype, impl in (("ref", m64, torch.float64, "eager"), ("torch", mlp, dtype, "eager"),
                                        ("attnrt", mlp, dtype, name)):
        module.zero_grad(set_to_none=True)
        q, k, v = (t.to(wdtype).detach().requires_grad_() for t in (q0, k0, v0))
        embeds = torch.empty(batch, seqlen, cfg.hidden_size, device=device, dtype=wdtype)
        pos = torch.arange(seqlen, device=device)[None]
        mask = mask_for(cfg, module, impl, embeds, pos)
        if impl != "eager" and mask is not None:
            raise AssertionError(f"transformers gave {impl} a {type(mask)} mask, expected None")
        fn = attnrt.hf.attention_forward if impl != "eager" else gptoss.eager_attention_forward
        # What GptOssAttention.forward passes (eager reads module.sinks and the mask, not the last two).
        out, _ = fn(module, q, k, v, mask, dropout=0.0, scaling=module.scaling,
                    sliding_window=module.sliding_window, s_aux=module.sinks)
        out.backward(do0.to(wdtype))
        results[label] = (out.detach(), q.grad, k.grad, v.grad, module.sinks.grad.clone())
    used = at.backend_name(q0.transpose(1, 2), k0.transpose(1, 2), v0.transpose(1, 2), value, causal=True,
                           softmax_scale=m64.scaling, sinks=mlp.sinks,
                           window_left=(m64.sliding_window - 1) if m64.sliding_window else -1)
    ck.backends.add(used)
    ref = results["ref"]
    lse = reference_lse(q0, k0, m64.sinks.detach(), m64.scaling, m64.sliding_window, h // hkv)
    o_rounding = maxerr(dsinks_from_output(results["attnrt"][0], do0, lse, m64.sinks.detach()), ref[4])
    for i, what in enumerate(("out", "dq", "dk", "dv", "dsinks")):
        extra = o_rounding if what == "dsinks" else 0.0
        ck.check(case, what, results["attnrt"][i], maxerr(results["torch"][i], ref[i]), ref[i], dtype, extra)


def module_level(cfg, m64, dtype, name, batch, seqlen, ck, device, gen):
    """The whole GptOssAttention (projections, rotary, attention, o_proj), eager vs attnrt."""
    x0 = torch.randn(batch, seqlen, cfg.hidden_size, device=device, generator=gen).to(dtype)
    dy0 = torch.randn(batch, seqlen, cfg.hidden_size, device=device, generator=gen).to(dtype)
    rotary = gptoss.GptOssRotaryEmbedding(cfg).to(device)
    pos = torch.arange(seqlen, device=device)[None]
    mlp = low_precision(m64, dtype)
    kind = "window" if m64.sliding_window else "full"
    case = f"module {kind} {str(dtype)[6:]} b{batch} s{seqlen}"
    results = {}
    for label, module, wdtype, impl in (("ref", m64, torch.float64, "eager"), ("torch", mlp, dtype, "eager"),
                                        ("attnrt", mlp, dtype, name)):
        module.zero_grad(set_to_none=True)
        x = x0.to(wdtype).detach().requires_grad_()
        mask = mask_for(cfg, module, impl, x, pos)
        cfg._attn_implementation = impl
        y, _ = module(x, rotary(x, pos), mask)
        y.backward(dy0.to(wdtype))
        results[label] = (y.detach(), x.grad, module.sinks.grad.clone(), module.q_proj.weight.grad)
    ref = results["ref"]
    for i, what in enumerate(("out", "dx", "dsinks", "dWq")):
        ck.check(case, what, results["attnrt"][i], maxerr(results["torch"][i], ref[i]), ref[i], dtype)


def main():
    a = parse()
    device = torch.device(a.device)
    name = attnrt.hf.register(a.implementation)
    cfg = make_config(a)
    print(f"torch {torch.__version__}, transformers {__import__('transformers').__version__}, "
          f"device {torch.cuda.get_device_name(device) if device.type == 'cuda' else 'cpu'}; "
          f"attnrt implementation {name!r}; heads {a.heads}/{a.kv_heads}, head_dim 64, hidden {a.hidden}, "
          f"sliding_window {a.window}, batch {a.batch}")
    ck = Checker()
    gen = torch.Generator(device=device).manual_seed(a.seed)
    t0 = time.time()
    for layer_idx in (0, 1):  # sliding_attention, full_attention
        m64 = make_module(cfg, layer_idx, a.seed + layer_idx, device).double()
        for dt in a.dtypes.split(","):
            for s in (int(x) for x in a.seqlens.split(",")):
                if "attn" in a.levels:
                    attn_level(cfg, m64, DTYPES[dt], name, a.implementation, a.batch, s, ck, device, gen)
                if "module" in a.levels:
                    module_level(cfg, m64, DTYPES[dt], name, a.batch, s, ck, device, gen)
    print(f"attnrt backends that ran: {sorted(ck.backends)}")
    print(f"{ck.rows - ck.failures}/{ck.rows} comparisons pass ({time.time() - t0:.1f} s)")
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())
