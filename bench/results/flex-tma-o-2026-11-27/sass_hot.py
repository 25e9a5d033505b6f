"""Reads Nsight Compute's source page (--page source --csv --print-source sass, gzipped) of one
kernel: the stall reasons summed over all samples, the instructions with the most samples, and,
for addresses given (their last hex digits), the instructions before each with their top stall
reasons. Usage: python3 sass_hot.py call3/sass_flex_causal.csv.gz [TOP] [ADDR ...]
"""
import csv
import gzip
import sys

rows = list(csv.reader(gzip.open(sys.argv[1], "rt")))
h, data = rows[1], rows[2:]
ia, isrc = h.index("Address"), h.index("Source")
iall, iex = h.index("Warp Stall Sampling (All Samples)"), h.index("Instructions Executed")
stalls = [i for i, n in enumerate(h) if n.startswith("stall_") and "Not Issued" not in n]
num = lambda v: int(v) if v and v.isdigit() else 0
total = sum(num(r[iall]) for r in data)
sums = {h[i][6:]: sum(num(r[i]) for r in data) for i in stalls}
print("samples", total, "instructions executed", sum(num(r[iex]) for r in data))
print(" ".join(f"{k}={100 * v / total:.1f}%" for k, v in sorted(sums.items(), key=lambda x: -x[1])[:8]))


def reasons(r):
    top = sorted(stalls, key=lambda i: -num(r[i]))[:3]
    return ",".join(f"{h[i][6:]}:{r[i]}" for i in top if num(r[i]))


top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
for r in sorted(data, key=lambda r: -num(r[iall]))[:top]:
    print(f"{num(r[iall]):6d} {100 * num(r[iall]) / total:5.1f}% ex={r[iex]:>7} {r[ia][-5:]} {r[isrc].strip()[:70]:70s} {reasons(r)}")
for a in sys.argv[3:]:
    at = next(i for i, r in enumerate(data) if r[ia].endswith(a))
    print("--", a)
    for r in data[max(0, at - 12): at + 3]:
        print(f"{num(r[iall]):5d} ex={r[iex]:>6} {r[ia][-5:]} {r[isrc].strip()[:70]:70s} {reasons(r)}")
