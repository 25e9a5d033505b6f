"""Pipelined ms per call (the bench's `pipelined` note) of each variant's rounds in one call's
folder: python3 table.py callN [SEQLEN]. Rows: hd, mod; cells: the rounds' values, per variant
(files VARIANT_hdHD_ROUND.csv)."""
import collections, csv, glob, os, re, sys

folder, seqlen = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "2048")
cells = collections.defaultdict(list)
variants = []
for path in sorted(glob.glob(os.path.join(folder, "*_hd*_*.csv"))):
    m = re.match(r"(.+)_hd(\d+)_(\d+)\.csv", os.path.basename(path))
    v, hd = m.group(1), m.group(2)
    if v not in variants: variants.append(v)
    for r in csv.DictReader(open(path)):
        if r["seqlen"] != seqlen: continue
        mod = r["mod"] if r["backend"] == "flex_attention" else r["backend"] + " " + r["mod"]
        p = re.search(r"pipelined ([0-9.]+) ms", r["note"])
        cells[(hd, mod, v)].append(float(p.group(1)) * 1e3)
order = ["main"] + [v for v in variants if v != "main"]
print(f"S{seqlen}, pipelined us per call (rounds)\n")
print("| hd | mod | " + " | ".join(order) + " |")
print("|---|---|" + "---|" * len(order))
for hd, mod in sorted({(k[0], k[1]) for k in cells}, key=lambda x: (int(x[0]), x[1])):
    print(f"| {hd} | {mod} | " + " | ".join(", ".join(f"{x:.1f}" for x in cells[(hd, mod, v)]) for v in order) + " |")
