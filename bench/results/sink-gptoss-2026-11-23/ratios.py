#!/usr/bin/env python3
"""sink (with sinks) / flash_attention_3 (no sinks) per case and round, and sink / CUDA eager, from
gptoss_bench.csv (run.sh's rows: file = round_backend_mask_tokens, then attnrt bench --csv)."""
import collections
import csv
import os
import sys

path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "gptoss_bench.csv")
t = collections.defaultdict(dict)
for r in csv.DictReader(open(path)):
    rnd = r["file"].split("_")[0]
    be = {"flash_attention_3": "fa3"}.get(r["backend"], r["backend"])
    t[r["case"].replace("_sinks", "")][(rnd, be)] = (float(r["tflops"]), float(r["ms"]))
print(f"{'case':<40} {'round':<6} {'sink TFLOP/s':>12} {'fa3 TFLOP/s':>12} {'sink/fa3':>9}")
for case, d in t.items():
    for rnd in ("r1", "r2", "e"):
        if (rnd, "sink") in d and (rnd, "fa3") in d:
            s, f = d[(rnd, "sink")][0], d[(rnd, "fa3")][0]
            print(f"{case:<40} {rnd:<6} {s:12.1f} {f:12.1f} {s / f:9.3f}")
    if ("e", "eager") in d:
        e, s = d[("e", "eager")][1], d[("e", "sink")][1]
        print(f"{case:<40} {'eager':<6} eager {e:.3f} ms, sink {s:.3f} ms: sink {e / s:.1f}x faster")
