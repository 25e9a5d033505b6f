"""PyTorch's compiled flex_attention on the mods attnrt_flex_bench times (bench/flex_bench.cpp):
the same shapes, mask rules, aux tensors and TFLOP/s convention (4 * batch * heads * visible
pairs * head_dim / time, forward), block masks from create_block_mask (128 x 128). With --backward,
also the backward alone (torch.autograd.grad of the compiled call's output, retained graph) as
rows torch_flex_backward, 2.5 times the forward's FLOPs (10 * batch * heads * pairs * head_dim).
With --block-mask, instead, create_block_mask alone for each mod with a mask of its own (B = H =
None, 128 x 128 blocks, on the GPU), as PyTorch runs it by default and with _compile=True, as
rows torch_create_block_mask and torch_create_block_mask_compiled (attnrt_flex_bench --block-mask
1 times attnrt's). CSV on stdout.

    python3 bench/torch_flex_anchors.py --hdim 64,128 --seqlen 2048,8192 [--backward] [--csv anchors_flex.csv]
    python3 bench/torch_flex_anchors.py --seqlen 8192,32768 --block-mask [--csv anchors_masks.csv]
"""
import argparse
import sys

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention


def documents(seqlen):
    # Documents of 1/16, 2/16, 3/16, 4/16 of the sequence, repeating (flex_bench.cpp: the same).
    doc, at, i = [], 0, 0
    while at < seqlen:
        n = seqlen // 16 * (1 + i % 4)
        doc += [i] * min(n, seqlen - at)
        at += n
        i += 1
    return torch.tensor(doc, dtype=torch.int32, device="cuda")


def mods(seqlen, heads):
    slopes = torch.exp2(-8.0 * torch.arange(1, heads + 1, device="cuda") / heads)
    table = torch.randn(heads, 2 * seqlen - 1, device="cuda") * 0.5
    doc = documents(seqlen)
    causal = lambda b, h, q, k: q >= k
    return [
        ("causal", None, causal),
        ("sliding_window_256", None, lambda b, h, q, k: (q >= k) & (q - k < 256)),
        ("prefix_lm", None, lambda b, h, q, k: (k < seqlen // 4) | (q >= k)),
        ("document_mask", None, lambda b, h, q, k: (doc[q] == doc[k]) & (q >= k)),
        ("alibi", lambda s, b, h, q, k: s + slopes[h] * (k - q), causal),
        ("softcap", lambda s, b, h, q, k: 20.0 * torch.tanh(s * 0.05), causal),
        ("relative_bias", lambda s, b, h, q, k: s + table[h, q - k + seqlen - 1], causal),
        ("dense", None, lambda b, h, q, k: q >= 0),
        ("block_sparse_90", None, lambda b, h, q, k: ((q // 128) * 7919 + (k // 128) * 104729) % 10 == 0),
    ]


def median_ms(fn, warmup=3, iters=10):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hdim", default="64,128")
    ap.add_argument("--seqlen", default="2048,8192")
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--backward", action="store_true")
    ap.add_argument("--block-mask", action="store_true")
    ap.add_argument("--csv")
    ap.add_argument("--mods", help="comma-separated mod names to time (default: every mod)")
    args = ap.parse_args()
    wanted = set(args.mods.split(",")) if args.mods else None
    chosen = lambda seqlen: [m for m in mods(seqlen, args.heads) if wanted is None or m[0] in wanted]
    out = open(args.csv, "w") if args.csv else None
    # One compiled graph per mod and shape: past dynamo's default limit of 8 it would fall back
    # to flex_attention's unfused eager path (80-107 ms at 8k, measured) without failing.
    torch._dynamo.config.recompile_limit = 256
    torch._dynamo.config.accumulated_recompile_limit = 4096
    compiled = torch.compile(flex_attention, dynamic=False)

    def row(line):
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()

    row("backend,mod,batch,heads,seqlen,head_dim,ms,tflops,visible_pairs,note")
    if args.block_mask:
        for seqlen in map(int, args.seqlen.split(",")):
            for name, score_mod, mask_mod in chosen(seqlen):
                if score_mod is not None or name == "dense":
                    continue  # the score mods' mask is causal's
                for backend, compile_ in (("torch_create_block_mask", False),
                                          ("torch_create_block_mask_compiled", True)):
                    try:
                        fn = lambda: create_block_mask(mask_mod, None, None, seqlen, seqlen, device="cuda",
                                                       BLOCK_SIZE=128, _compile=compile_)
                        ms = median_ms(fn)
                        row(f"{backend},{name},1,1,{seqlen},,{ms:.4f},,,")
                    except Exception as e:  # out of memory materializing the mask, say
                        row(f"{backend},{name},1,1,{seqlen},,,,,failed: {type(e).__name__}: "
                            f"{str(e).splitlines()[0][:120]}")
                    torch.cuda.empty_cache()
        return 0
    for hd in map(int, args.hdim.split(",")):
        for seqlen in map(int, args.seqlen.split(",")):
            q, k, v = (torch.randn(args.batch, args.heads, seqlen, hd, device="cuda", dtype=torch.bfloat16)
                       for _ in range(3))
            qi = torch.arange(seqlen, device="cuda")
            for name, score_mod, mask_mod in chosen(seqlen):
                # broadcast: a rule of q alone (dense's q >= 0) gives a column, not the square
                visible = float(torch.broadcast_to(mask_mod(0, 0, qi[:, None], qi[None, :]), (seqlen, seqlen)).sum())
                try:
                    bm = create_block_mask(mask_mod, None, None, seqlen, seqlen, device="cuda")
                    fn = lambda: compiled(q, k, v, score_mod=score_mod, block_mask=bm)
                    ms = median_ms(fn)
                    tf = 4.0 * args.batch * args.heads * visible * hd / (ms * 1e-3) / 1e12
                    row(f"torch_flex,{name},{args.batch},{args.heads},{seqlen},{hd},{ms:.4f},{tf:.1f},{visible:.0f},")
                    if args.backward:
                        qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
                        o = compiled(qg, kg, vg, score_mod=score_mod, block_mask=bm)
                        do = torch.randn_like(o)
                        ms = median_ms(lambda: torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True))
                        tf = 10.0 * args.batch * args.heads * visible * hd / (ms * 1e-3) / 1e12
                        row(f"torch_flex_backward,{name},{args.batch},{args.heads},{seqlen},{hd},{ms:.4f},{tf:.1f},"
                            f"{visible:.0f},")
                        del qg, kg, vg, o, do
                except Exception as e:  # a mod torch cannot compile at this shape (hd64 relative bias)
                    row(f"torch_flex,{name},{args.batch},{args.heads},{seqlen},{hd},,,{visible:.0f},"
                        f"failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            del q, k, v
            torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
