# Per-kernel GPU time of one attention backward, for PyTorch's cuDNN and flash SDPA backends and
# for attnrt's plugins through attnrt.torch, measured by torch.profiler (CUPTI) in one process.
# It shows where a backward's time goes beside its main kernel: D = rowsum(dO * O), the dQ
# accumulator's zeroing and conversion, and the gaps between them.
# Shapes as torch_sdpa_anchors.py: bf16, batch x seqlen = 16k tokens, hidden 2048.
# Usage: python3 backward_kernels.py [--hdim 128] [--seqlen 2048,4096,8192] [--mask full,causal]
#        [--impl flash_attention_3] [--reps 20]; prints rows and writes $OUT/backward_kernels.csv.
import argparse
import csv
import os
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile

from attention_cases import attention, cases, qkv

ap = argparse.ArgumentParser()
ap.add_argument("--hdim", default="128")
ap.add_argument("--seqlen", default="2048,4096,8192")
ap.add_argument("--mask", default="full,causal")
ap.add_argument("--impl", default="flash_attention_3")
ap.add_argument("--reps", type=int, default=20)
ap.add_argument("--impl-first", action="store_true", help="time --impl before PyTorch's backends in each case")
args = ap.parse_args()

rows = []
for hd, heads, s, batch, mask, causal in cases(args.hdim, args.seqlen, args.mask):
    order = ("torch_cudnn", "torch_flash", args.impl)
    for name in (order[2:] + order[:2] if args.impl_first else order):
        q, k, v = qkv(batch, s, heads, hd)
        out = attention(name, q, k, v, causal)
        dout = torch.randn_like(out)
        grad = lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)
        for _ in range(5):
            grad()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.reps):
                grad()
            torch.cuda.synchronize()
        per_kernel = defaultdict(float)
        first, last = None, None
        for ev in prof.events():
            if ev.device_type != torch.autograd.DeviceType.CUDA:
                continue
            per_kernel[ev.name] += ev.device_time / args.reps
            first = ev.time_range.start if first is None else min(first, ev.time_range.start)
            last = ev.time_range.end if last is None else max(last, ev.time_range.end)
        span = (last - first) / args.reps
        busy = sum(per_kernel.values())
        case = f"hd{hd}_s{s}_b{batch}_{mask}"
        print(f"{case} {name}: span {span:.1f} us/call, kernels {busy:.1f} us", flush=True)
        for kname, us in sorted(per_kernel.items(), key=lambda kv: -kv[1]):
            print(f"    {us:9.1f} us  {kname[:150]}")
            rows.append(dict(case=case, impl=name, kernel=kname[:200], us=round(us, 2)))
        rows.append(dict(case=case, impl=name, kernel="(span per call)", us=round(span, 2)))
        del q, k, v, out, dout

path = os.path.join(os.environ.get("OUT", "/tmp"), "backward_kernels.csv")
with open(path, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["case", "impl", "kernel", "us"])
    w.writeheader()
    w.writerows(rows)
print("wrote", path)
