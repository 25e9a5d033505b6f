"""Train a small causal language model with an attention implementation chosen by name, as the
seed's ``train.py --attn_implementation X`` does, and print its loss and tokens/s.

    python -m attnrt.examples.train --attn_implementation sdpa --steps 100
    python -m attnrt.examples.train --attn_implementation flash_attention_2 --device cuda --dtype bf16
    python -m attnrt.examples.train --attn_implementation hf:sdpa      # transformers' own, to compare

``--attn_implementation`` is any attnrt value (a plugin name or alias, ``auto``, a path to a
plugin; registered through :mod:`attnrt.hf`, so a refused feature falls back with its reason in
the ``attnrt`` logger), or ``hf:<name>`` for one of transformers' own implementations (``hf:sdpa``,
``hf:eager``) as the baseline.

The model is transformers' Llama (``--arch llama``: RoPE, GQA with 2 KV heads over 4 query heads),
GPT-2 (``gpt2``) or gpt-oss (``gptoss``: attention sinks and a sliding window on every other
layer), small and randomly initialised from ``--seed``. The corpus is Python's own documentation
(the standard library's ``pydoc_data.topics``, about 460 KB of English text, so nothing is
downloaded) read as bytes: a vocabulary of 256 tokens, no tokenizer. Batches are random windows
of ``--seqlen`` bytes drawn from a generator seeded by ``--seed``, so two runs with the same
seed see the same tokens and start from the same weights: their loss curves differ only by
the attention kernels' rounding. ``--csv FILE`` writes step, loss, milliseconds per step.
"""
from __future__ import annotations

import argparse
import csv
import logging
import os
import sys
import time

# attnrt's CPU plugins and PyTorch each keep an OpenMP thread pool (the system's libgomp and the
# one torch ships), and libgomp's idle workers spin by default: two pools on the same cores then
# starve each other (measured on 2 cores: 2.3 s per step against 35 ms). Passive waiting, unless
# the user chose otherwise, before either runtime starts.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
from tqdm import tqdm  # noqa: E402


def corpus() -> torch.Tensor:
    """Python's documentation topics (stdlib pydoc_data) as a uint8 tensor of byte tokens."""
    from pydoc_data.topics import topics

    text = "\n\n".join(topics[k] for k in sorted(topics))
    return torch.frombuffer(bytearray(text.encode("utf-8")), dtype=torch.uint8)


def implementation_name(value: str) -> str:
    """transformers' attn_implementation for `value`: hf:<name> is transformers' own, anything
    else attnrt's (registered with transformers by attnrt.hf)."""
    if value.startswith("hf:"):
        return value[3:]
    import attnrt.hf

    return attnrt.hf.register(value)


def make_model(arch: str, seqlen: int, attn_implementation: str, hidden: int = 128, layers: int = 2, heads: int = 4):
    import transformers

    if hidden % heads:
        raise ValueError(f"--hidden {hidden} is not a multiple of --heads {heads}")
    # Built with transformers' eager attention, then switched: the weights are initialised the same
    # whatever implementation is asked for (transformers' init path may depend on its name).
    common = dict(vocab_size=256, attn_implementation="eager")
    kv_heads = max(1, heads // 2)  # GQA: two query heads per KV head
    if arch == "llama":
        config = transformers.LlamaConfig(hidden_size=hidden, intermediate_size=hidden * 11 // 4, num_hidden_layers=layers,
                                          num_attention_heads=heads, num_key_value_heads=kv_heads,
                                          max_position_embeddings=seqlen, **common)
    elif arch == "gpt2":
        config = transformers.GPT2Config(n_embd=hidden, n_layer=layers, n_head=heads, n_positions=seqlen, **common)
    elif arch == "gptoss":
        config = transformers.GptOssConfig(hidden_size=hidden, intermediate_size=hidden, head_dim=hidden // heads,
                                           num_hidden_layers=layers, num_attention_heads=heads,
                                           num_key_value_heads=kv_heads, num_local_experts=4, num_experts_per_tok=2,
                                           sliding_window=64,
                                           layer_types=["sliding_attention", "full_attention"] * (layers // 2) +
                                           ["sliding_attention"] * (layers % 2), **common)
    else:
        raise ValueError(f"--arch {arch!r}: llama, gpt2 or gptoss")
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    model.set_attn_implementation(attn_implementation)
    return model


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m attnrt.examples.train", description=__doc__.split("\n\n")[0])
    p.add_argument("--attn_implementation", "--attn-implementation", default="sdpa",
                   help="an attnrt value (sdpa, eager, flash_attention_2, auto, a plugin path, ...) or hf:<name>")
    p.add_argument("--arch", default="llama", choices=["llama", "gpt2", "gptoss"])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seqlen", type=int, default=256)
    p.add_argument("--hidden", type=int, default=128, help="model width (head_dim = hidden / heads)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4, help="query heads; key/value heads are half as many")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"],
                   help="bf16: the model in bfloat16 autocast (CUDA), weights and optimizer in fp32")
    p.add_argument("--csv", help="write step,loss,ms rows to this file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s")
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    name = implementation_name(args.attn_implementation)
    model = make_model(args.arch, args.seqlen, name, args.hidden, args.layers, args.heads).to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    data = corpus()
    gen = torch.Generator().manual_seed(args.seed)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.dtype == "bf16")

    rows = []
    tokens_per_step = args.batch * args.seqlen
    timed_tokens, timed_seconds = 0, 0.0
    bar = tqdm(range(1, args.steps + 1), desc=f"{args.arch} {args.attn_implementation}", disable=args.quiet,
               file=sys.stderr)
    for step in bar:
        starts = torch.randint(0, data.numel() - args.seqlen - 1, (args.batch,), generator=gen)
        batch = torch.stack([data[s:s + args.seqlen + 1] for s in starts.tolist()]).long().to(device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with autocast:
            loss = model(input_ids=batch[:, :-1], labels=batch[:, :-1]).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        value = loss.item()  # synchronizes
        seconds = time.perf_counter() - t0
        if step > 1:  # the first step pays for resolution, allocation and kernel caches
            timed_tokens += tokens_per_step
            timed_seconds += seconds
        rows.append((step, value, seconds * 1e3))
        bar.set_postfix(loss=f"{value:.4f}", tok_s=f"{tokens_per_step / seconds:,.0f}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["step", "loss", "ms"])
            w.writerows(rows)
    tokens_per_second = timed_tokens / timed_seconds if timed_seconds else float("nan")
    print(f"{args.arch} {args.attn_implementation} ({name}) on {device} {args.dtype}: {args.steps} steps, loss "
          f"{rows[0][1]:.4f} -> {rows[-1][1]:.4f}, {tokens_per_second:,.0f} tokens/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
