"""attnrt's plugins as Hugging Face transformers attention implementations.

``import attnrt.hf`` registers, with transformers' ``AttentionInterface`` and
``AttentionMaskInterface``, the name ``attnrt`` (attnrt's ``auto``) and ``attnrt:<value>`` for
the built-in plugin names (eager, sdpa, flash_attention_2, flash_attention_3, sink;
``register(value)`` adds any other name, alias or path, and returns the name to use), so that
``from_pretrained(..., attn_implementation="attnrt:sdpa")`` runs attnrt's kernel (on a model
without transformers' SDPA support, gpt-oss, pass ``attnrt:SDPA``: see :func:`register`). The mask
function is transformers' FlashAttention one: the model passes the 2-D padding mask (or None).

Keyword arguments are mapped exactly (transformers' names -> attnrt's):
  scaling -> softmax_scale; is_causal (default module.is_causal) -> causal;
  sliding_window W (W visible keys) -> window_left W - 1 (and causal); softcap -> softcap;
  s_aux -> sinks (gpt-oss; a bf16/fp16 parameter is converted to the ABI's float32);
  dropout must be 0 (attnrt's CPU plugins have no dropout);
  a 2-D padding mask [batch, seq_k] -> each sequence's valid tokens (right or left padding).
Anything else attnrt cannot honour (packed-sequence kwargs, head masks, output_attentions=True,
an unknown keyword) raises with its name instead of being dropped. Input is transformers'
[batch, heads, seq, head_dim] (views, not copied); output [batch, seq, heads, head_dim].
"""
from __future__ import annotations

from typing import Optional

import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.masking_utils import flash_attention_mask

import attnrt
from attnrt import torch as at

__all__ = ["attention_forward", "register", "PREFIX"]

PREFIX = "attnrt"
# Keywords a model passes that carry nothing attnrt must honour (None / False / the defaults).
# output_router_logits: a mixture-of-experts model's (gpt-oss) flag for its router, passed down every layer.
_NEUTRAL = {"position_ids", "cache_position", "use_cache", "past_key_values", "past_key_value", "layer_idx",
            "output_router_logits"}
_UNSUPPORTED_IF_SET = {"cu_seq_lens_q", "cu_seq_lens_k", "max_length_q", "max_length_k", "head_mask", "encoder_hidden_states",
                       "position_bias", "cache"}


# Registered transformers name -> attnrt value.
_VALUES = {PREFIX: "auto"}
# transformers reads these substrings in any attn_implementation name as a request for its own
# integration (modeling_utils: `"sdpa" in name` runs the model's SDPA check, which gpt-oss fails;
# utils/generic.py: `"flash" in name` is "flash attention requested" and loads flash_attn or a
# hub kernel), so the name register() returns never contains them.
_TRIGGERS = {"sdpa": "SDPA", "flex_attention": "FLEX_ATTENTION", "flash": "FLASH"}


def _implementation(module) -> str:
    name = getattr(getattr(module, "config", None), "_attn_implementation", None) or PREFIX
    return _VALUES.get(name, "auto")


def attention_forward(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attention_mask: Optional[torch.Tensor], dropout: float = 0.0, scaling: Optional[float] = None,
                      is_causal: Optional[bool] = None, sliding_window: Optional[int] = None,
                      softcap: Optional[float] = None, s_aux: Optional[torch.Tensor] = None,
                      output_attentions: bool = False, **kwargs):
    for name, val in kwargs.items():
        if name in _NEUTRAL:
            continue
        if name in _UNSUPPORTED_IF_SET:
            if val is not None:
                raise attnrt.UnsupportedError(f"attnrt.hf: '{name}' is not supported yet (it would be dropped)")
            continue
        raise TypeError(f"attnrt.hf: unknown keyword argument '{name}' (attnrt maps every argument it receives)")
    if dropout:
        raise attnrt.UnsupportedError(f"attnrt.hf: dropout {dropout} > 0 is not supported by attnrt's plugins")
    if output_attentions:
        raise attnrt.UnsupportedError("attnrt.hf: output_attentions=True (attnrt never materialises weights)")
    causal = bool(getattr(module, "is_causal", False) if is_causal is None else is_causal)
    window_left = -1
    if sliding_window is not None:
        window_left = int(sliding_window) - 1
    params = dict(implementation=_implementation(module), softmax_scale=scaling, causal=causal,
                  window_left=window_left, softcap=float(softcap or 0.0), sinks=s_aux)
    q, k, v = (t.transpose(1, 2) for t in (query, key, value))  # [b, s, h, d] views
    if attention_mask is not None and attention_mask.dim() != 2:
        raise attnrt.UnsupportedError(f"attnrt.hf: a {attention_mask.dim()}-D attention_mask (the mask function "
                                      f"registered with attnrt gives 2-D padding masks or None)")
    if attention_mask is None or bool(attention_mask.all()):
        return at.attention(q, k, v, **params), None
    # Padding: each sequence's valid tokens on their own (what varlen computes); padded query rows
    # are zero.
    if q.shape[1] != k.shape[1]:
        raise attnrt.UnsupportedError("attnrt.hf: a padding mask with seq_q != seq_k")
    out = q.new_zeros(q.shape[:3] + (v.shape[-1],))
    for b in range(q.shape[0]):
        idx = attention_mask[b].nonzero().squeeze(1)
        if idx.numel():
            o = at.attention(q[b:b + 1, idx], k[b:b + 1, idx], v[b:b + 1, idx], **params)
            out[b, idx] = o[0]
    return out, None


def register(value: str = "auto") -> str:
    """Registers attnrt's `value` (a plugin name, alias, path or auto) with transformers under the
    name ``attnrt:<value>`` (``attnrt`` for auto) and returns the name to pass as
    ``attn_implementation``. transformers takes a name containing ``sdpa`` or ``flex_attention`` for
    its own SDPA or flex integration and checks the model for it (gpt-oss has no SDPA support), and
    ``flash`` as a request for the flash_attn package or a hub kernel, so for such a value the
    returned name spells them in capitals (``attnrt:SDPA``, ``attnrt:FLASH_attention_2``); the
    lower-case name is registered too and works where transformers' own checks pass."""
    name = PREFIX if value == "auto" else f"{PREFIX}:{value}"
    safe = name
    for trigger, spelled in _TRIGGERS.items():
        safe = safe.replace(trigger, spelled)
    for n in {name, safe}:
        _VALUES[n] = value
        AttentionInterface.register(n, attention_forward)
        AttentionMaskInterface.register(n, flash_attention_mask)
    return safe


for _value in ("auto", "eager", "sdpa", "flash_attention_2", "flash_attention_3", "sink"):
    register(_value)
