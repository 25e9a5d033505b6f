"""Host time per attention call through attnrt.torch against torch's own SDPA (issue 18: below
torch's call overhead; resolution <= 20 us), on a GPU, tiny shapes so the host is what is timed:
each call's wall time on the host with the GPU idle (synchronised before every call, not after),
median over many calls. Also the first call per shape (resolution and caches) and the training
example's step time is measured separately (attnrt.examples.train).

    python bench/python/torch_overhead.py [--csv FILE]
"""
import argparse
import csv
import statistics
import time

import torch
import torch.nn.functional as F

import attnrt.torch as at


def host_us(fn, n=2000):
    samples = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(samples)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--csv")
    args = p.parse_args()
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(1, 128, h, 64, generator=g, device="cuda", dtype=torch.bfloat16) for h in (8, 2, 2))
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    rows = []
    rows.append(("torch_sdpa_forward", host_us(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=True,
                                                                                       enable_gqa=True))))
    for impl in ("flash_attention_2", "flash_attention_3", "sdpa", "eager"):
        if at.backend_name(q, k, v, impl, causal=True) != impl:
            continue
        rows.append((f"attnrt_{impl}_forward", host_us(lambda: at.attention(q, k, v, implementation=impl, causal=True))))
    # Resolution: a new descriptor each time (another window, so the per-shape cache misses),
    # forward included.
    windows = iter(range(130, 130 + 400))

    def new_shape():
        at.attention(q, k, v, implementation="flash_attention_2", causal=True, window_left=next(windows))
    rows.append(("attnrt_resolve_and_forward_new_shape", host_us(new_shape, n=300)))
    rows.append(("empty_cuda_op (torch.Tensor.add_)", host_us(lambda: q.add_(0))))
    for name, us in rows:
        print(f"{name:45s} {us:8.1f} us")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["row", "host_us_median"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
