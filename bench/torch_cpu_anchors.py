"""PyTorch's CPU scaled_dot_product_attention on the shapes of bench/cpu_attention_bench.cpp.

For machines where attnrt_cpu_bench is built without libtorch (the GPU machine's run, whose
torch differs from the build machine's): run both in the same call and compare rows by name.
Same data layout as the C++ benchmark: [batch, seqlen, heads, head_dim] memory, torch gets the
transposed view; batch 1, 8 heads, head_dim 64; forward through F.scaled_dot_product_attention
(its CPU flash-attention kernel), backward through
aten._scaled_dot_product_flash_attention_for_cpu_backward, as the C++ benchmark calls them.
TFLOP/s with FlashAttention's count: 4 * batch * heads * seqlen^2 * head_dim forward, half
when causal, backward 2.5x forward.

Usage: python3 bench/torch_cpu_anchors.py [--threads N] [--seqlens 512,1024,...] [--min-time S]
Writes CSV rows (name,ms,tflops,threads) to stdout and to $OUT/torch_cpu.csv when OUT is set.
"""
import argparse
import csv
import os
import sys
import time

import torch
import torch.nn.functional as F

BATCH, HEADS, HEAD_DIM = 1, 8, 64


def timed(fn, min_time):
    fn()  # warm-up: first-call allocations and oneDNN kernel generation
    times = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start >= min_time and len(times) >= 3:
            break
    times.sort()
    return times[len(times) // 2]  # median, seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seqlens", default="512,1024,2048,4096")
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--passes", default="forward,backward")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rows = []
    for pass_ in args.passes.split(","):
        for bf16 in (0, 1):
            for causal in (0, 1):
                for s in map(int, args.seqlens.split(",")):
                    dtype = torch.bfloat16 if bf16 else torch.float32
                    q, k, v, dout = (torch.randn(BATCH, s, HEADS, HEAD_DIM, dtype=dtype).transpose(1, 2)
                                     for _ in range(4))
                    flops = 4.0 * BATCH * HEADS * s * s * HEAD_DIM / (2.0 if causal else 1.0)
                    with torch.inference_mode():
                        if pass_ == "forward":
                            sec = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)),
                                        args.min_time)
                        else:
                            flops *= 2.5
                            out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                                q, k, v, 0.0, bool(causal))
                            bwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward
                            sec = timed(lambda: bwd(dout, q, k, v, out, lse, 0.0, bool(causal)), args.min_time)
                    name = f"BM_torch_{pass_}/seqlen:{s}/causal:{causal}/bf16:{bf16}"
                    rows.append(dict(name=name, ms=round(sec * 1e3, 3), tflops=round(flops / sec * 1e-12, 4),
                                     threads=args.threads))
                    print(f"{name},{rows[-1]['ms']},{rows[-1]['tflops']},{args.threads}", flush=True)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], f"torch_cpu_t{args.threads}.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["name", "ms", "tflops", "threads"])
            w.writeheader()
            w.writerows(rows)
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{torch.backends.cpu.get_cpu_capability()}", file=sys.stderr)


if __name__ == "__main__":
    main()
