# What bench/python's per-call scripts share: FlashAttention's benchmark shapes (bf16, batch x
# seqlen = 16k tokens, hidden 2048) and one attention call by PyTorch's cuDNN or flash SDPA backend
# or by an attnrt plugin through attnrt.torch, all on [batch, seqlen, heads, head_dim] tensors.
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import attnrt.torch as at

TORCH_BACKENDS = {"torch_cudnn": SDPBackend.CUDNN_ATTENTION, "torch_flash": SDPBackend.FLASH_ATTENTION}


def cases(hdims: str, seqlens: str, masks: str):
    """(head_dim, heads, seqlen, batch, mask, causal) for comma-separated lists."""
    for hd in (int(x) for x in hdims.split(",")):
        for s in (int(x) for x in seqlens.split(",")):
            for mask in masks.split(","):
                yield hd, 2048 // hd, s, max(1, 16384 // s), mask, mask == "causal"


def qkv(batch: int, seqlen: int, heads: int, head_dim: int):
    """q, k, v [batch, seqlen, heads, head_dim] bf16 on the GPU, standard normal, requiring grad."""
    g = torch.Generator(device="cuda").manual_seed(0)
    return tuple(torch.randn(batch, seqlen, heads, head_dim, device="cuda", dtype=torch.bfloat16, generator=g)
                 .requires_grad_() for _ in range(3))


def attention(name: str, q, k, v, causal: bool):
    """out [batch, seqlen, heads, head_dim] by `name`: torch_cudnn, torch_flash, or an attnrt plugin."""
    if name in TORCH_BACKENDS:
        with sdpa_kernel([TORCH_BACKENDS[name]]):
            return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                  is_causal=causal).transpose(1, 2)
    return at.attention(q, k, v, implementation=name, causal=causal)
