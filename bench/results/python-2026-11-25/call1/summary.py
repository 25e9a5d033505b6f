"""Loss curves of the training runs against their baseline (transformers' own implementation,
same seed): largest |loss difference| over the 200 steps, the final losses, and the median step
time over steps 11-200."""
import csv
import glob
import os
import statistics
import sys

out = sys.argv[1]


def read(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return [float(r["loss"]) for r in rows], [float(r["ms"]) for r in rows]


for arch, base in (("llama", "hf_sdpa"), ("gptoss", "hf_eager")):
    bpath = os.path.join(out, f"train_{arch}_{base}.csv")
    if not os.path.exists(bpath):
        print(f"{arch}: no baseline run")
        continue
    bl, bms = read(bpath)
    print(f"{arch}: baseline {base}: loss {bl[0]:.4f} -> {bl[-1]:.4f}, {statistics.median(bms[10:]):.2f} ms/step")
    for path in sorted(glob.glob(os.path.join(out, f"train_{arch}_*.csv"))):
        name = os.path.basename(path)[len(f"train_{arch}_"):-4]
        if name == base:
            continue
        lo, ms = read(path)
        n = min(len(lo), len(bl))
        diff = max(abs(a - b) for a, b in zip(lo[:n], bl[:n]))
        print(f"  {name:18s} loss {lo[0]:.4f} -> {lo[-1]:.4f}  max |diff| {diff:.4f} over {n} steps  "
              f"{statistics.median(ms[10:]):.2f} ms/step ({statistics.median(bms[10:]) / statistics.median(ms[10:]):.2f}x)")
