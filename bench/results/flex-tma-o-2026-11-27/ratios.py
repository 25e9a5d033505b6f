"""Per round, from one call's CSVs (VARIANT_hdHD_ROUND.csv): flash_attention_3's causal over flex
causal (same process), and dense over block_sparse_90, at one seqlen.
Usage: python3 ratios.py callN VARIANT [SEQLEN]"""
import csv, glob, os, re, sys

folder, variant = sys.argv[1], sys.argv[2]
seqlen = sys.argv[3] if len(sys.argv) > 3 else "2048"
for path in sorted(glob.glob(os.path.join(folder, f"{variant}_hd*_*.csv"))):
    t = {}
    for r in csv.DictReader(open(path)):
        if r["seqlen"] != seqlen: continue
        key = r["mod"] if r["backend"] == "flex_attention" else r["backend"]
        t[key] = float(re.search(r"pipelined ([0-9.]+) ms", r["note"]).group(1)) * 1e3
    hd, rnd = re.match(r".+_hd(\d+)_(\d+)\.csv", os.path.basename(path)).groups()
    print(f"hd{hd} round {rnd}: fa3/flex causal {t['flash_attention_3'] / t['causal']:.3f} "
          f"({t['flash_attention_3']:.1f} / {t['causal']:.1f} us), dense/sparse {t['dense'] / t['block_sparse_90']:.2f}x")
