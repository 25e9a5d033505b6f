# Sustained attention throughput: each implementation's forward+backward or backward run back to
# back for a few seconds (as in training, no L2 flush or idle gap between calls), against the same
# calls timed with triton's do_bench (which clears the L2 before each call, as the anchor scripts
# do), with the GPU's SM clock, power draw and temperature sampled by nvidia-smi meanwhile. It
# tells whether a ratio measured call by call holds when the GPU runs at its power limit.
# PyTorch's cuDNN and flash SDPA backends and attnrt's plugins through attnrt.torch, one process.
# Usage: python3 sustained.py [--hdim 128] [--seqlen 4096,16384] [--mask full] [--seconds 3]
#        [--impl flash_attention_3]; prints rows, writes $OUT/sustained.csv and $OUT/smi.csv.
import argparse
import csv
import os
import subprocess
import time

import torch
import triton

from attention_cases import attention, cases, qkv

ap = argparse.ArgumentParser()
ap.add_argument("--hdim", default="128")
ap.add_argument("--seqlen", default="4096,16384")
ap.add_argument("--mask", default="full")
ap.add_argument("--seconds", type=float, default=3.0)
ap.add_argument("--impl", default="flash_attention_3")
args = ap.parse_args()
out_dir = os.environ.get("OUT", "/tmp")

smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu",
                        "--format=csv,noheader,nounits", "-lms", "100"],
                       stdout=open(os.path.join(out_dir, "smi.csv"), "w"), stderr=subprocess.DEVNULL)

rows = []
for hd, heads, s, batch, mask, causal in cases(args.hdim, args.seqlen, args.mask):
    flops = 4.0 * batch * heads * s * s * hd * (0.5 if causal else 1.0) * 2.5
    for rnd in (1, 2):
        for name in ("torch_cudnn", args.impl):
            q, k, v = qkv(batch, s, heads, hd)
            o = attention(name, q, k, v, causal)
            do = torch.randn_like(o)
            step = lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True)
            ms_bench = triton.testing.do_bench(step, warmup=25, rep=100, return_mode="median")
            # back to back for `seconds`, then the median of the last half's per-call times
            times, t_start = [], time.time()
            while time.time() - t_start < args.seconds:
                evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                       for _ in range(10)]
                for a, b in evs:
                    a.record()
                    step()
                    b.record()
                torch.cuda.synchronize()
                times += [a.elapsed_time(b) for a, b in evs]
            t_end = time.time()
            late = sorted(times[len(times) // 2:])
            ms_sustained = late[len(late) // 2]
            case = f"hd{hd}_s{s}_b{batch}_{mask}_bwd"
            row = dict(case=case, impl=name, round=rnd, ms_do_bench=round(ms_bench, 4),
                       tflops_do_bench=round(flops / ms_bench / 1e9, 1), ms_sustained=round(ms_sustained, 4),
                       tflops_sustained=round(flops / ms_sustained / 1e9, 1), calls=len(times),
                       t_start=round(t_start, 2), t_end=round(t_end, 2))
            rows.append(row)
            print(row, flush=True)
            del q, k, v, o, do
            torch.cuda.empty_cache()
            time.sleep(1.0)
smi.terminate()
with open(os.path.join(out_dir, "sustained.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
print("wrote", out_dir)
