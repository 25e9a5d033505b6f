"""The 90%-sparse forward's stall samples by code region, from the previous session's Nsight
Compute source page (flex-fixed-cost-2026-11-27/call3/sass_flex_sparse.csv.gz: hd64 S2048,
128-row tiles). Prints the executed code in runs of up to 96 instructions (address suffix,
length, samples, execution counts, notable opcodes), then the sums of the regions the README
names, by address suffix: python3 regions.py [CSV.GZ]."""
import csv
import gzip
import os
import sys

path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "../flex-fixed-cost-2026-11-27/call3/sass_flex_sparse.csv.gz")
rows = list(csv.reader(gzip.open(path, "rt")))
h, data = rows[1], rows[2:]
ia, isrc = h.index("Address"), h.index("Source")
iall, iex = h.index("Warp Stall Sampling (All Samples)"), h.index("Instructions Executed")
num = lambda v: int(v) if v and v.isdigit() else 0
total = sum(num(r[iall]) for r in data)
OPS = ("HGMMA", "MUFU.EX2", "STG", "SYNCS", "BAR.", "LDS", "STS", "LDG", "UTMALDG", "SHFL", "NANOSLEEP", "EXIT")
runs, run = [], []
for r in data + [None]:
    if r is None or num(r[iex]) == 0 or len(run) >= 96:
        if run:
            runs.append(run)
        run = [] if r is None or num(r[iex]) == 0 else [r]
    else:
        run.append(r)
share = {}
for run in runs:
    a = int(run[0][ia], 16) & 0xFFFFF
    s = sum(num(r[iall]) for r in run)
    ex = [num(r[iex]) for r in run]
    ops = sorted({k for r in run for k in OPS if k in r[isrc]})
    share[a] = s
    if s >= 15:
        print(f"{a:05x} n={len(run):3d} samples={s:4d} ({100 * s / total:4.1f}%) executed={min(ex)}-{max(ex)} {' '.join(ops)}")
# Consumer regions (ex = 4096: once per tile and consumer warp; 2048: the two-block tiles' loop):
regions = {
    "first tile's wait": (0x006D0, 0x00940),
    "tile prologue": (0x00F40, 0x055E0),
    "products and softmax": (0x055E0, 0x1A190),
    "epilogue (O to shared memory and out, LSE)": (0x1A190, 0x1BBD0),
    "hand-off to the next tile": (0x1BBD0, 0x1C1D0),
}
print(f"\nsamples {total}")
for name, (lo, hi) in regions.items():
    s = sum(v for a, v in share.items() if lo <= a < hi)
    print(f"{name}: {100 * s / total:.1f}%")
