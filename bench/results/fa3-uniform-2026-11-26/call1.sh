#!/usr/bin/env bash
# Issues 13 and 15: the warpgroup index, the claimed tile and the walk's length made warp-uniform
# for the compiler (a shuffle from lane 0, CUTLASS's canonical_warp_group_idx idiom), so that
# flash_attention_3's forward and backward (and flex's, built on them) form their wgmma
# descriptors in uniform registers. This tree against main's flash_attention_3 and
# flex_attention_cuda plugins (.gpu/base, first in ATTNRT_PLUGIN_PATH), alternated, two rounds:
#   attnrt bench attnrt.device=cuda --hdim 64,128 --seqlen 2048,4096,8192 --mask both
#     --backends flash_attention_3,sdpa (sdpa on CUDA: cuDNN), forward and backward;
#   attnrt_flex_bench --hdim 128,64 --seqlen 2048,8192 --backward 1 --mods causal,
#     sliding_window_256,document_mask,alibi,dense --reps 20.
set -u
cd "$(dirname "$0")/../../../.gpu"
cudnn_dir=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn_dir:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_uniform1
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
BASE=$PWD/base
B="attnrt.device=cuda --hdim 64,128 --seqlen 2048,4096,8192 --mask both --backends flash_attention_3,sdpa"
F="--hdim 128,64 --seqlen 2048,8192 --backward 1 --mods causal,sliding_window_256,document_mask,alibi,dense --reps 20"
for r in 1 2; do
  timeout 80 bin/attnrt bench $B --csv $O/bench_new_$r.csv > $O/bench_new_$r.txt 2>&1; echo "bench new $r rc=$?"
  ATTNRT_PLUGIN_PATH=$BASE timeout 80 bin/attnrt bench $B --csv $O/bench_base_$r.csv > $O/bench_base_$r.txt 2>&1; echo "bench base $r rc=$?"
done
for r in 1 2; do
  timeout 120 bin/attnrt_flex_bench $F --csv $O/flex_new_$r.csv > $O/flex_new_$r.txt 2>&1; echo "flex new $r rc=$?"
  ATTNRT_PLUGIN_PATH=$BASE timeout 120 bin/attnrt_flex_bench $F --csv $O/flex_base_$r.csv > $O/flex_base_$r.txt 2>&1; echo "flex base $r rc=$?"
done
python3 - "$O" <<'PY' > $O/ab.md
import csv, sys, glob
O = sys.argv[1]
def load(path, key, val):
    try:
        return {key(r): float(r[val]) for r in csv.DictReader(open(path)) if r.get(val)}
    except FileNotFoundError:
        return {}
for kind, key, val in [("bench", lambda r: (r["case"], r["backend"], r["pass"]), "ms"),
                       ("flex", lambda r: (r["mod"], r["seqlen"], r["head_dim"], r["backend"]), "ms")]:
    runs = {f"{v}_{r}": load(f"{O}/{kind}_{v}_{r}.csv", key, val) for v in ("new", "base") for r in (1, 2)}
    print(f"\n{kind}: ms new_1 base_1 new_2 base_2, base/new per round")
    for k in runs["new_1"]:
        vals = [runs[n].get(k) for n in ("new_1", "base_1", "new_2", "base_2")]
        if None in vals: continue
        print(" | ".join(map(str, k)), " ".join(f"{x:.4f}" for x in vals), f"{vals[1]/vals[0]:.3f} {vals[3]/vals[2]:.3f}")
PY
cat $O/ab.md
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
