#!/usr/bin/env bash
# Issue 15, call 4 (main's plugin): where flex causal's fixed ~10 us against flash_attention_3
# lies at hd128 S2048 (call 3: the gap is 10-12 us at batch 1 to 8). Nsight Compute's duration
# of every kernel (one kernel alone) for hd128 causal at batch 1 and 8, and hd64 at batch 1;
# then, where nsys exists, the pipelined timeline (gaps between kernels) of the same runs.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w .
O=${OUT:-/tmp/o}/call4; mkdir -p $O
trap 'cd $O/.. && tar czf call4.tgz call4 && rm -rf call4' EXIT
nvidia-smi -L > $O/gpu.txt
export ATTNRT_CACHE_DIR=/tmp/fc_main
for hd in 64 128; do
  timeout 200 bin/attnrt_flex_bench --hdim $hd --seqlen 2048 --mods causal --backward 0 --reps 1 > $O/warm_$hd.txt 2>&1 &
done
wait
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys /usr/local/cuda/bin/nsys 2>/dev/null | head -1)
echo "ncu=$NCU nsys=$NSYS"
for cfg in "128 1" "128 8" "64 1"; do
  set -- $cfg
  timeout 150 $NCU --clock-control none --csv --metrics gpu__time_duration.sum \
    bin/attnrt_flex_bench --hdim $1 --seqlen 2048 --batch $2 --mods causal --backward 0 --reps 3 \
    > $O/ncu_hd$1_b$2.csv 2> $O/ncu_hd$1_b$2.err
  echo "== ncu hd$1 b$2 rc=$?"
  python3 - $O/ncu_hd$1_b$2.csv <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; rows = rows[1:]
ki, vi, ni = h.index("Kernel Name"), h.index("Metric Value"), h.index("Metric Name")
d = collections.defaultdict(list)
for r in rows:
    if r[ni] == "gpu__time_duration.sum": d[r[ki][:50]].append(float(r[vi].replace(",", "")))
for k, v in d.items(): print(f"  {k}: n={len(v)} median={sorted(v)[len(v)//2]:.0f} min={min(v):.0f}")
PY
done
if [ -n "$NSYS" ]; then
  for cfg in "128 1" "64 1"; do
    set -- $cfg
    timeout 150 $NSYS profile -o $O/nsys_hd$1_b$2 --force-overwrite true -t cuda \
      bin/attnrt_flex_bench --hdim $1 --seqlen 2048 --batch $2 --mods causal --backward 0 --reps 20 > $O/nsys_hd$1_b$2.txt 2>&1
    timeout 100 $NSYS stats -r cuda_gpu_trace -f csv -o $O/trace_hd$1_b$2 $O/nsys_hd$1_b$2.nsys-rep > /dev/null 2>&1
    echo "== nsys hd$1 b$2: $(ls $O | grep trace_hd$1 | head -2)"
    python3 - $O/trace_hd$1_b$2_cuda_gpu_trace.csv <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ks = [(int(r["Start (ns)"]), int(r["Duration (ns)"]), r["Name"][:40]) for r in rows]
ks.sort()
# the last 30 operations: start gap after the previous one's end, duration
prev_end = None
for s, d, n in ks[-30:]:
    gap = "" if prev_end is None else f"gap {(s - prev_end) / 1e3:6.2f} us"
    print(f"  {n:40s} {d / 1e3:7.2f} us {gap}")
    prev_end = s + d
PY
  done
fi
rm -f $O/*.nsys-rep $O/*.sqlite
