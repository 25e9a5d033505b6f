"""Call 3's two S2048/S8192 bars per round, from its CSVs' pipelined notes (microseconds a call):
causal as a mask_mod over flash_attention_3's causal (time ratio, FA3 / flex: bar 0.9x) and dense
over the 90%-sparse block mask (bar 5x). Usage: python3 ratios.py [call3]"""
import csv
import re
import sys
from pathlib import Path

folder = Path(sys.argv[1] if len(sys.argv) > 1 else "call3")
print("| hd | S | round | flex causal | FA3 causal | FA3 / flex | dense | 90% sparse | dense / sparse |")
print("|---|---|---|---|---|---|---|---|---|")
for hd in (64, 128):
    for seqlen in (2048, 8192):
        for rnd in (1, 2, 3):
            t = {}
            for row in csv.DictReader(open(folder / f"hd{hd}_{rnd}.csv")):
                m = re.search(r"pipelined ([0-9.]+) ms", row["note"] or "")
                if m and int(row["seqlen"]) == seqlen:
                    t[(row["backend"], row["mod"])] = float(m.group(1)) * 1000
            fc, f3 = t[("flex_attention", "causal")], t[("flash_attention_3", "causal_builtin")]
            de, sp = t[("flex_attention", "dense")], t[("flex_attention", "block_sparse_90")]
            print(f"| {hd} | {seqlen} | {rnd} | {fc:.1f} | {f3:.1f} | {f3 / fc:.2f}x | {de:.1f} | {sp:.1f} | {de / sp:.2f}x |")
