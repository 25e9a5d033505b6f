"""Host time per attention call through attnrt.torch against torch's own SDPA (issue 18: below
torch's call overhead; resolution <= 20 us), tiny shapes so the host is what is timed: each
call's wall time on the host with the GPU idle (synchronised before every call, not after),
median over many calls. Also a new call shape per call (resolution included), calls whose
inputs require grad (the autograd node), and the custom op called directly (the operator
dispatcher's path, which attention() skips in eager mode). The training example's step time is
measured separately (attnrt.examples.train). On the CPU (--device cpu, one thread) the same rows
measure the Python and binding share without a GPU.

    python bench/python/torch_overhead.py [--device cuda|cpu] [--csv FILE]
"""
import argparse
import csv
import statistics
import time

import torch
import torch.nn.functional as F

import attnrt.torch as at


def host_us(fn, n=2000, cuda=True):
    for _ in range(100):  # caches, allocator pools, branch predictors
        fn()
    samples = []
    for _ in range(n):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(samples)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--csv")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = p.parse_args()
    cuda = args.device == "cuda"
    if cuda:
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(1, 128, h, 64, generator=g, device="cuda", dtype=torch.bfloat16) for h in (8, 2, 2))
        impls = ("flash_attention_2", "flash_attention_3", "sdpa", "eager")
    else:  # the CPU kernels' own time kept small: 4 tokens, fp32, one thread
        torch.set_num_threads(1)
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(1, 4, h, 64, generator=g) for h in (8, 2, 2))
        impls = ("sdpa", "eager")

    def timed(fn, n=2000):
        return host_us(fn, n, cuda)
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
    qgt, kgt, vgt = (t.transpose(1, 2) for t in (qg, kg, vg))
    rows = []
    rows.append(("torch_sdpa_forward", timed(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=True,
                                                                                     enable_gqa=True))))
    rows.append(("torch_sdpa_forward_requires_grad",
                 timed(lambda: F.scaled_dot_product_attention(qgt, kgt, vgt, is_causal=True, enable_gqa=True))))
    scale = 1.0 / 8.0
    for impl in impls:
        if at.backend_name(q, k, v, impl, causal=True) != impl:
            continue
        rows.append((f"attnrt_{impl}_forward", timed(lambda: at.attention(q, k, v, implementation=impl, causal=True))))
        rows.append((f"attnrt_{impl}_forward_requires_grad",
                     timed(lambda: at.attention(qg, kg, vg, implementation=impl, causal=True))))
        rows.append((f"attnrt_{impl}_custom_op_forward",
                     timed(lambda: torch.ops.attnrt.forward(q, k, v, None, impl, scale, True, -1, -1, 0.0))))
    # Resolution: a new descriptor each time (another window, so the per-shape cache misses),
    # forward included.
    windows = iter(range(130, 130 + 500))
    first = impls[0] if at.backend_name(q, k, v, impls[0], causal=True) == impls[0] else "sdpa"

    def new_shape():
        at.attention(q, k, v, implementation=first, causal=True, window_left=next(windows))
    rows.append((f"attnrt_resolve_and_forward_new_shape ({first})", timed(new_shape, n=300)))
    rows.append((f"empty_{args.device}_op (torch.Tensor.add_)", timed(lambda: q.add_(0))))
    for name, us in rows:
        print(f"{name:45s} {us:8.1f} us")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["row", "host_us_median"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
