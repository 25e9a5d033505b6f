"""Joins call1.sh's A/B CSVs (new = this tree, base = main before the change, alternated) into
markdown: flash_attention_3 against cuDNN (attnrt bench rows, sdpa = cuDNN), and flex_attention's
forward per mod with flash_attention_3's built-in causal. Usage: python3 ab.py OUT_DIR"""
import csv
import glob
import os
import sys
from collections import defaultdict

d = sys.argv[1]


def rows(pattern):
    out = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(d, pattern))):
        for r in csv.DictReader(open(path)):
            yield r


bench = defaultdict(list)  # (case, backend, variant) -> [ms]
for variant in ("new", "base"):
    for r in rows(f"bench_{variant}_*.csv"):
        if r["ms"]:
            bench[(r["case"], r["backend"], variant)].append(float(r["ms"]))
cases = sorted({k[0] for k in bench})
print("| case | fa3 new ms | fa3 base ms | cuDNN ms (all runs) | new / base speed | new vs cuDNN | base vs cuDNN |")
print("|---|---|---|---|---|---|---|")
for c in cases:
    new, base = bench.get((c, "flash_attention_3", "new"), []), bench.get((c, "flash_attention_3", "base"), [])
    cud = bench.get((c, "sdpa", "new"), []) + bench.get((c, "sdpa", "base"), [])
    if not new or not base or not cud:
        continue
    mn, mb, mc = min(new), min(base), min(cud)
    f = lambda v: ", ".join(f"{x:.4f}" for x in v)
    print(f"| {c} | {f(new)} | {f(base)} | {f(cud)} | {mb / mn:.3f}x | {mc / mn:.3f}x | {mc / mb:.3f}x |")
print()
flex = defaultdict(list)  # (backend, mod, seqlen, hd, variant) -> [ms]
for variant in ("new", "base"):
    for r in rows(f"flex_{variant}_*.csv"):
        if r["ms"]:
            flex[(r["backend"], r["mod"], r["seqlen"], r["head_dim"], variant)].append(float(r["ms"]))
keys = sorted({k[:4] for k in flex}, key=lambda k: (k[3], int(k[2]), k[0], k[1]))
print("| backend | mod | S | hd | new ms | base ms | new / base speed |")
print("|---|---|---|---|---|---|---|")
for k in keys:
    new, base = flex.get(k + ("new",), []), flex.get(k + ("base",), [])
    if not new or not base:
        continue
    f = lambda v: ", ".join(f"{x:.4f}" for x in v)
    print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {f(new)} | {f(base)} | {min(base) / min(new):.3f}x |")
print()
print("causal as a mask_mod against flash_attention_3's built-in causal (min over runs):")
for variant in ("new", "base"):
    for hd in ("64", "128"):
        for S in ("2048", "8192"):
            m = flex.get(("flex_attention", "causal", S, hd, variant))
            b = flex.get(("flash_attention_3", "causal_builtin", S, hd, variant))
            if m and b:
                print(f"- {variant} hd{hd} S{S}: {min(b) / min(m):.3f}x")
