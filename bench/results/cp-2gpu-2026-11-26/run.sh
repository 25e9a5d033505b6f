#!/usr/bin/env bash
# Ring attention on two GPUs over NCCL (issue 20), on the two-GPU machine, from a folder staged by
# tools/gpu_cp_stage.sh (this script is copied into it as run.sh):
#   device tool: kind nvidia-h100-x2, carry [".gpu-cp"], command "bash .gpu-cp/run.sh"
# 1. the machine: nvidia-smi, the GPUs' topology, which libnccl is used;
# 2. the 4k cases alone (a quick stop if something basic is broken: the full run is skipped);
# 3. every case (4k to 256k, flash_attention_2 and _3, causal / full / GQA / MQA / window /
#    contiguous) and the bad-shard case; each rank's log and CSV under $OUT/full;
# 4. compute-sanitizer memcheck on one 4k case (both ranks).
# NCCL_NVLS_ENABLE=0: no NVLink multicast. CP_ARGS adds arguments to step 3 (e.g. --filter fa2).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-/tmp/attnrt_cp_2gpu}"
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
chmod -R go-w "$here" 2> /dev/null || true  # attnrt refuses plugin folders writable by others
# libnccl.so.2: PyTorch's wheel (nvidia-nccl-cu13 / -cu12), else the CUDA toolkit's, else any.
nccl=$(python3 -c "import nvidia.nccl, os, glob; print(glob.glob(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so*'))[0])" 2> /dev/null || true)
[ -z "$nccl" ] && nccl=$(ls /usr/local/cuda/lib*/libnccl.so.2 /usr/lib/x86_64-linux-gnu/libnccl.so.2 2> /dev/null | head -1)
[ -z "$nccl" ] && nccl=$(find / -name 'libnccl.so.2*' -not -path '*/proc/*' 2> /dev/null | head -1)
export ATTNRT_NCCL_LIBRARY="$nccl"
export LD_LIBRARY_PATH="$here/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
{
  echo "libnccl: $nccl"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  nvidia-smi topo -m
} 2>&1 | tee "$out/machine.txt"

status=0
echo "=== 2. 4k cases"
timeout -k 10 100 "$here/bin/attnrt_cp_2gpu_test" --out "$out/s4k" --filter s4k --deadline-s 90 2>&1 | tee "$out/s4k.txt"
status=${PIPESTATUS[0]}
if [ "$status" -eq 0 ]; then
  echo "=== 3. every case"
  timeout -k 10 300 "$here/bin/attnrt_cp_2gpu_test" --out "$out/full" --deadline-s 290 ${CP_ARGS:-} 2>&1 |
    tee "$out/full.txt"
  status=${PIPESTATUS[0]}
fi
echo "=== 4. compute-sanitizer memcheck, one 4k case (the BlockOps kernels, NCCL, the plugin)"
if command -v compute-sanitizer > /dev/null || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  timeout -k 10 150 "$sanitizer" --tool memcheck --target-processes all --error-exitcode 9 \
    "$here/bin/attnrt_cp_2gpu_test" --out "$out/memcheck" --filter fa2_s4k_causal --deadline-s 140 \
    > "$out/memcheck.txt" 2>&1
  echo "memcheck exit status $? (0: clean; 9: errors found; 124: timed out)" | tee -a "$out/memcheck.txt"
  grep -E "ERROR SUMMARY|========= (Invalid|Program hit)" "$out/memcheck.txt" | sort | uniq -c | head -20
fi

echo "=== summary"
lines=$(cat "$out"/s4k.txt "$out"/full.txt 2> /dev/null | grep -E "^\[rank [01]\] [a-z0-9_]+ +r[01] (PASS|FAIL)")
echo "case lines: $(echo "$lines" | grep -c " PASS") PASS, $(echo "$lines" | grep -c " FAIL") FAIL (a line per case and rank)"
echo "$lines" | grep " FAIL" | cut -c1-600
grep -hE "^rank [01]:|^(PASSED|FAILED)$|fatal|still running" "$out"/s4k.txt "$out"/full.txt 2> /dev/null
exit "$status"
