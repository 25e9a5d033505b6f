#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/; -DATTNRT_FUZZ=ON: clang, libFuzzer, ASan, UBSan, CUDA off) in
# build-fuzz/ and runs each for a bounded time over a copy of its committed seed corpus
# (fuzz/corpus/<target>/) with its dictionary (fuzz/dict/<target>.dict). Any finding fails the
# script: a crash, an ASan or UBSan report, an exception other than attnrt::Error, a broken
# invariant, one input taking over 5 s, or over 2 GiB of memory. The input that caused it is
# saved as build-fuzz/findings/<target>/crash-* (or timeout-*, oom-*); replay it with
# `build-fuzz/fuzz/attnrt_fuzz_<target> <file>`. Inputs the run found new coverage with stay in
# build-fuzz/run/<target>/corpus/ (not committed; copy the few interesting ones to fuzz/corpus/).
#   tools/fuzz.sh [seconds per target (default 60)] [target ...]
# Targets: config overrides manifest_yaml manifest_json safetensors value_form (fuzz/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(config overrides manifest_yaml manifest_json safetensors value_form)
if ! command -v clang++ > /dev/null; then
  echo "fuzz: clang++ is not installed (Debian: apt-get install clang libclang-rt-14-dev; tools/install_deps.sh)"
  exit 1
fi
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNRT_FUZZ=ON > /dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/#/attnrt_fuzz_}"
export UBSAN_OPTIONS=print_stacktrace=1
failed=()
for t in "${targets[@]}"; do
  run=build-fuzz/run/$t
  rm -rf "$run"
  mkdir -p "$run/corpus" "$run/tmp" "build-fuzz/findings/$t"
  cp fuzz/corpus/"$t"/* "$run/corpus/"
  status=0
  # TMPDIR: what a target makes there (the manifest targets' plugin folder) stays in build-fuzz/.
  TMPDIR="$PWD/$run/tmp" "build-fuzz/fuzz/attnrt_fuzz_$t" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
    -dict="fuzz/dict/$t.dict" -artifact_prefix="build-fuzz/findings/$t/" -print_final_stats=1 \
    "$run/corpus" > "$run/log" 2>&1 || status=$?
  # libFuzzer's last status line ("#N DONE cov: .. ft: .. corp: ..") and its final statistics.
  last=$(grep -E '^#[0-9]+' "$run/log" | tail -n 1 | sed -E 's/^#([0-9]+)[[:space:]]+[A-Z]+[[:space:]]+/\1 runs, /')
  if [ "$status" -eq 0 ]; then
    echo "fuzz: $t: ${seconds} s, ${last:-no status line}; no finding"
  else
    echo "fuzz: $t: FAILED (exit $status) after ${last:-no status line}; its log, $run/log, ends:"
    tail -n 40 "$run/log" | sed 's/^/  /'
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]} (inputs in build-fuzz/findings/)"
  exit 1
fi
