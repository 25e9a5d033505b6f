"""Joins `attnrt bench --csv` rows with torch_sdpa_anchors.py's anchors.csv (same case names)
and prints TFLOP/s and the ratios to PyTorch's flash backend (FlashAttention-2) and to its cuDNN backend.
Usage: python3 bench_join.py attnrt_bench.csv anchors.csv"""
import csv
import sys

ours = list(csv.DictReader(open(sys.argv[1])))
anchors = {}
for row in csv.DictReader(open(sys.argv[2])):
    anchors[(row["case"], row["backend"])] = float(row["tflops"])
print(f"{'case':34} {'backend':18} {'TFLOP/s':>8} {'torch_flash':>11} {'ratio':>6} {'torch_cudnn':>11} {'ratio':>6}")
for r in ours:
    if r["note"]:
        print(f"{r['case']:34} {r['backend']:18} {'n/a':>8}  {r['note']}")
        continue
    t = float(r["tflops"])
    fa = anchors.get((r["case"], "torch_flash"))
    cu = anchors.get((r["case"], "torch_cudnn"))
    ratio = f"{t / fa:.2f}x" if fa else "-"
    ratio_cu = f"{t / cu:.2f}x" if cu else "-"  # sdpa on CUDA runs cuDNN: its ratio is this one
    print(f"{r['case']:34} {r['backend']:18} {t:8.1f} {fa or 0:11.1f} {ratio:>6} {cu or 0:11.1f} {ratio_cu:>6}")
