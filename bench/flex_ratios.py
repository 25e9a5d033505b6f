#!/usr/bin/env python3
"""Joins attnrt_flex_bench's CSV (bench/flex_bench.cpp) with torch_flex_anchors.py's of the same
call by (mod, seqlen, head_dim, direction: the *_backward rows of --backward) and prints a Markdown table: both times, both TFLOP/s,
attnrt's speedup (torch ms / attnrt ms), and optionally a second attnrt CSV's ms (another
kernel, e.g. ATTNRT_FLEX_FORWARD=flash_attention_2) beside them. The built-in rows
(flash_attention_2/3's own causal) are listed with flex's causal as a fraction of them.

    flex_ratios.py ATTNRT.csv TORCH.csv [--other OTHER.csv --other-name NAME]
"""
import argparse
import csv


def load(path):
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            rows[(r["backend"], r["mod"], r["seqlen"], r["head_dim"])] = r
    return rows


def num(r, key):
    try:
        return float(r[key])
    except (KeyError, TypeError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("attnrt")
    ap.add_argument("torch")
    ap.add_argument("--other")
    ap.add_argument("--other-name", default="other")
    args = ap.parse_args()
    ours, theirs = load(args.attnrt), load(args.torch)
    other = load(args.other) if args.other else {}
    head = "| S | hd | mod | direction | attnrt ms | torch ms | attnrt TFLOP/s | torch TFLOP/s | torch / attnrt |"
    if args.other:
        head += f" {args.other_name} ms |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for (backend, mod, s, hd), r in ours.items():
        if backend not in ("flex_attention", "flex_attention_backward"):
            continue
        backward = backend.endswith("_backward")
        t = theirs.get(("torch_flex_backward" if backward else "torch_flex", mod, s, hd))
        ms, tms = num(r, "ms"), num(t, "ms") if t else None
        ratio = f"{tms / ms:.2f}x" if ms and tms else ("failed" if t else "-")
        line = (f"| {s} | {hd} | {mod} | {'backward' if backward else 'forward'} | {r['ms']} | "
                f"{t['ms'] if t and t['ms'] else '-'} | {r['tflops']} | "
                f"{t['tflops'] if t and t['tflops'] else '-'} | {ratio} |")
        if args.other:
            o = other.get((backend, mod, s, hd))
            line += f" {o['ms'] if o else '-'} |"
        print(line)
    print()
    print("| S | hd | built-in causal | ms | TFLOP/s | flex causal / built-in (time) |")
    print("|---|---|---|---|---|---|")
    for (backend, mod, s, hd), r in ours.items():
        if mod != "causal_builtin":
            continue
        flex = ours.get(("flex_attention_backward" if backend.endswith("_backward") else "flex_attention", "causal",
                         s, hd))
        ratio = f"{num(r, 'ms') / num(flex, 'ms'):.2f}x" if flex else "-"
        print(f"| {s} | {hd} | {backend} | {r['ms']} | {r['tflops']} | {ratio} |")


if __name__ == "__main__":
    main()
