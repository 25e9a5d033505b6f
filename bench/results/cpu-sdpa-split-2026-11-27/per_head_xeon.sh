#!/bin/bash
# Issue 19, 2026-11-27: the backward per (sequence, kv head) (main 82d0b0a, new) against the two
# passes (main fa95d9e, pkg/variants/split) on the GPU machine's Xeon at 4 threads, where the
# benchmark's 8 (sequence, kv head) pairs are two a thread (at 16 threads both run the two
# passes); alternated, two rounds, rows to 2048 keys.
cd "$(dirname "$0")"; R=$(cd ../../.. && pwd); P=$R/build-cpubench/pkg
export LD_LIBRARY_PATH=$P/lib ATTNRT_BENCH_THREADS=4
chmod -R go-w $P
O=$OUT/per-head-xeon; mkdir -p $O; cd $O
trap 'cd $OUT && tar czf per-head-xeon.tgz per-head-xeon && rm -rf per-head-xeon' EXIT
lscpu > lscpu.txt
for round in 1 2; do
  for v in new split; do
    if [ $v = split ]; then export ATTNRT_PLUGIN_PATH=$P/variants/split; else unset ATTNRT_PLUGIN_PATH; fi
    $P/bin/attnrt_cpu_bench --benchmark_filter='BM_sdpa_backward/seqlen:(512|1024|2048)/' --benchmark_min_time=0.3 \
      --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_format=csv > ${v}_t4_r$round.csv 2> ${v}_t4_r$round.err
  done
done
unset ATTNRT_PLUGIN_PATH
for f in new_t4_r1.csv; do :; done
python3 - <<'PY'
import csv, glob, re
rows = {}
for f in sorted(glob.glob("*_t4_r*.csv")):
    v, r = re.match(r"(\w+)_t4_r(\d)", f).groups()
    for line in open(f):
        if "_median" in line:
            name = line.split(",")[0].strip('"').split("/min_time")[0].replace("BM_sdpa_backward/", "")
            rows.setdefault(name, {}).setdefault(v, []).append(float(line.split(",")[2]))
for n, d in rows.items():
    print(f"{n:40s} new {d.get('new')} two-pass {d.get('split')}")
PY
