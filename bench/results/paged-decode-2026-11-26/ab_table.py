"""Joins decode_ratios.py CSVs of one call (ratios_<variant>_r<round>.csv) into one Markdown table:
per case, each variant's paged TB/s and ratio to the call's torch cuDNN anchor, round by round.
Usage: python3 ab_table.py DIR variant1 variant2 ... (rounds found as r1, r2, ...)"""
import csv
import glob
import os
import re
import sys

d, variants = sys.argv[1], sys.argv[2:]
cols, table, cudnn = [], {}, {}
for v in variants:
    for path in sorted(glob.glob(os.path.join(d, f"ratios_{v}_r*.csv"))):
        r = re.search(r"_r(\d+)\.csv$", path).group(1)
        col = f"{v} r{r}"
        cols.append(col)
        for row in csv.DictReader(open(path)):
            case = row["case"].replace("decode_D128_", "")
            table.setdefault(case, {})[col] = (row["tbps"], row["ratio_cudnn"])
            cudnn[case] = row["torch_cudnn_tbps"]
print("| case | cuDNN TB/s | " + " | ".join(cols) + " |")
print("|---|---|" + "---|" * len(cols))
for case in table:
    cells = [f"{table[case][c][0]} ({table[case][c][1]}x)" if c in table[case] else "" for c in cols]
    print(f"| {case} | {cudnn[case]} | " + " | ".join(cells) + " |")
for c in cols:
    rs = [float(table[k][c][1]) for k in table if c in table[k] and table[k][c][1]]
    if rs:
        print(f"{c}: {sum(x >= 0.95 for x in rs)}/{len(rs)} cases >= 0.95x, lowest {min(rs):.3f}x")
