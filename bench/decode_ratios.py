"""Joins `attnrt bench --decode --csv` rows with torch_decode_anchors.py's decode_anchors.csv from
the same GPU call and writes each paged case's effective bandwidth beside PyTorch's contiguous
decode on the same shape (the issue 17 bar: paged >= 0.95x torch cuDNN on every shape and page
size) and the device copy bandwidth.
A paged case decode_D128_B16_K8192_H32_KV8_page16 joins the anchors' ..._contiguous case, and so
does its --kv-layout hnd twin ..._page16_hnd (PyTorch's cache is [batch, heads, keys, hd] either way).
Usage: python3 decode_ratios.py decode_bench.csv decode_anchors.csv [ratios.csv]
Prints a Markdown table; with a third argument also writes it as CSV."""
import csv
import re
import sys

BAR = 0.95
ours = list(csv.DictReader(open(sys.argv[1])))
anchors = {}
copy = None
for row in csv.DictReader(open(sys.argv[2])):
    try:
        tbps = float(row["tbps"])
    except ValueError:
        continue
    if row["backend"] == "copy":
        copy = tbps
    anchors[(row["case"], row["backend"])] = tbps

out = []
for r in ours:
    if r["note"] or float(r["tbps"]) <= 0:
        continue
    contiguous = re.sub(r"_(page\d+|contiguous)(_hnd)?$", "_contiguous", r["case"], count=1)
    cudnn = anchors.get((contiguous, "torch_cudnn"))
    flash = anchors.get((contiguous, "torch_flash"))
    t = float(r["tbps"])
    out.append({
        "case": r["case"],
        "backend": r["backend"],
        "tbps": f"{t:.3f}",
        "torch_cudnn_tbps": f"{cudnn:.3f}" if cudnn else "",
        "ratio_cudnn": f"{t / cudnn:.3f}" if cudnn else "",
        "torch_flash_tbps": f"{flash:.3f}" if flash else "",
        "ratio_flash": f"{t / flash:.3f}" if flash else "",
        "fraction_of_copy": f"{t / copy:.3f}" if copy else "",
        "meets_0.95x_cudnn": ("yes" if t / cudnn >= BAR else "no") if cudnn else "",
    })

cols = ["case", "backend", "tbps", "torch_cudnn_tbps", "ratio_cudnn", "torch_flash_tbps", "ratio_flash",
        "fraction_of_copy", "meets_0.95x_cudnn"]
print(f"copy bandwidth: {copy:.3f} TB/s" if copy else "copy bandwidth: (missing)")
print("| " + " | ".join(cols) + " |")
print("|" + "---|" * len(cols))
for o in out:
    print("| " + " | ".join(o[c] for c in cols) + " |")
paged = [o for o in out if o["backend"] == "paged_attention" and o["ratio_cudnn"]]
if paged:
    worst = min(paged, key=lambda o: float(o["ratio_cudnn"]))
    met = sum(o["meets_0.95x_cudnn"] == "yes" for o in paged)
    print(f"paged_attention: {met}/{len(paged)} cases at >= {BAR}x torch cuDNN; "
          f"lowest {worst['ratio_cudnn']}x ({worst['case']})")
if len(sys.argv) > 3:
    with open(sys.argv[3], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(out)
