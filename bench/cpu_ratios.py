"""Joins attnrt_cpu_bench's CSV (Google Benchmark, --benchmark_repetitions with aggregates) to
PyTorch's rows of the same call (bench/torch_cpu_anchors.py's output, one or more runs, or the
BM_torch_* rows of a benchmark built with libtorch) into the markdown table of docs/perf.md:
per row attnrt's median ms, torch's ms per run, and torch's time over attnrt's.

Usage: python3 bench/cpu_ratios.py ATTNRT_CSV [TORCH_FILE ...]
"""
import re
import sys


def key(name):
    m = re.search(r"BM_(?:sdpa|torch)_(forward|backward)/seqlen:(\d+)/causal:(\d)/bf16:(\d)", name)
    return (m.group(1), int(m.group(4)), int(m.group(3)), int(m.group(2))) if m else None


def read(path, want):
    """name -> ms for rows of `want` ('sdpa' or 'torch'): medians of aggregates, or plain rows."""
    rows = {}
    for line in open(path):
        name = line.split(",")[0].strip('"')
        if f"BM_{want}_" not in name or "_mean" in name or "_stddev" in name or "_cv" in name:
            continue
        k = key(name)
        if k is None:
            continue
        fields = line.strip().split(",")
        # Google Benchmark CSV: name,iterations,real_time,cpu_time,time_unit,...; the anchors
        # script: name,ms,tflops,threads.
        ms = float(fields[2]) if len(fields) > 5 else float(fields[1])
        if len(fields) > 5 and fields[4] == "us":
            ms /= 1e3
        rows[k] = ms
    return rows


def main():
    attnrt = read(sys.argv[1], "sdpa")
    torch_runs = [read(p, "torch") for p in (sys.argv[2:] or [sys.argv[1]])]
    lengths = sorted({k[3] for k in attnrt})
    print("| pass | dtype | causal | " + " | ".join(str(s) for s in lengths) + " |")
    print("|---|---|---|" + "---|" * len(lengths))
    for pass_ in ("forward", "backward"):
        for bf16 in (0, 1):
            for causal in (0, 1):
                cells = []
                for s in lengths:
                    k = (pass_, bf16, causal, s)
                    if k not in attnrt:
                        cells.append("")
                        continue
                    t = [r[k] for r in torch_runs if k in r]
                    if not t:
                        cells.append(f"{attnrt[k]:.3g} / not measured")
                        continue
                    ratios = [x / attnrt[k] for x in t]
                    cells.append(f"{attnrt[k]:.3g} / " + ", ".join(f"{x:.3g}" for x in t) + " = **" +
                                 "-".join(f"{r:.2f}" for r in sorted(ratios)) + "x**")
                if any(cells):
                    print(f"| {pass_} | {'bf16' if bf16 else 'fp32'} | {'yes' if causal else 'no'} | " +
                          " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
