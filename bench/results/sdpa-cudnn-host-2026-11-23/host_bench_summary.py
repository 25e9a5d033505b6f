#!/usr/bin/env python3
"""Summarises attnrt_sdpa_cuda_host_bench's Google Benchmark JSON (--benchmark_out, with
--benchmark_repetitions): per row the median host time per call (us), its spread over the
repetitions, and the difference to EmptyKernelLaunch's median, against issue 16's goal (sdpa
forward <= 5 us above a kernel launch). With the benchmark's stderr (ATTNRT_SDPA_CUDNN_TRACE=1)
it also counts cuDNN graph builds inside each timed loop (between "timing X" and "timed X"):
cache misses, which must be 0.

    host_bench_summary.py host_bench.json [host_bench_stderr.txt]
"""
import json
import re
import sys
from collections import defaultdict

GOAL_US = 5.0


def main():
    data = json.load(open(sys.argv[1]))
    stats = defaultdict(dict)
    for b in data["benchmarks"]:
        if b.get("run_type") != "aggregate":
            continue
        assert b["time_unit"] == "us", b["time_unit"]
        # call 1's binary set MinTime in code, which Google Benchmark adds to the name
        name = re.sub(r"/min_time:[0-9.]+", "", b["run_name"]).replace("/manual_time", "")
        stats[name][b["aggregate_name"]] = b["real_time"]
        stats[name]["repetitions"] = b.get("repetitions", 0)
    misses = defaultdict(int)
    lines = open(sys.argv[2]).readlines() if len(sys.argv) > 2 else []
    counted = any(line.startswith("timed ") for line in lines)  # call 1's binary printed no end marker
    if counted:
        inside = None
        for line in lines:
            if line.startswith("timing "):
                inside = line.split(" ", 1)[1].strip()
            elif line.startswith("timed "):
                inside = None
            elif "built graph #" in line and inside:
                misses[inside] += 1
    floor = stats["EmptyKernelLaunch"]["median"]
    ctx = data.get("context", {})
    print(f"host: {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz, "
          f"{ctx.get('date', '')}")
    print(f"host time per call, median of {stats['EmptyKernelLaunch'].get('repetitions', '?')} repetitions (us); "
          f"above launch = median - EmptyKernelLaunch's median ({floor:.2f} us); goal (issue 16): sdpa forward "
          f"<= {GOAL_US:.0f} us above the launch")
    print(f"{'benchmark':50} {'median':>8} {'stddev':>7} {'above launch':>13} {'graph builds while timed':>25}")
    for name, s in stats.items():
        above = s["median"] - floor
        print(f"{name:50} {s['median']:8.2f} {s.get('stddev', 0):7.2f} {above:13.2f} {misses.get(name, 0):25d}")
    for name, s in stats.items():
        if name.startswith("forward_with_workspace/sdpa/") or name.startswith("forward/sdpa/"):
            above = s["median"] - floor
            verdict = "meets" if above <= GOAL_US else "misses"
            print(f"{name}: {above:.2f} us above the launch: {verdict} the goal")
    if not counted:
        builds = sum("built graph #" in line for line in lines)
        print(f"cuDNN graph builds inside timed loops: not counted (no end markers in this log; {builds} builds in all)")
        return
    total_misses = sum(misses.values())
    print(f"cuDNN graph builds inside timed loops: {total_misses}" + (" (every timed call hit the cache)"
                                                                      if total_misses == 0 else ""))


if __name__ == "__main__":
    main()
