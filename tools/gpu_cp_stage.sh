#!/usr/bin/env bash
# Builds the two-GPU ring attention test (tests/gpu/context_parallel_2gpu.cpp, issue 20) here and
# stages a relocatable copy for the two-GPU machine in DEST (default .gpu-cp in this checkout; the
# device tool sends the main checkout's tree, so from a worktree pass DEST=/work/main/.gpu-cp):
#   bin/attnrt_cp_2gpu_test, bin/attnrt (for `attnrt bench --context-parallel`), lib/libattnrt.so*, lib/attnrt/plugins/flash_attention_{2,3}, the
#   Debian libraries the GPU machine lacks (yaml-cpp, fmt), and run.sh (bench/results/cp-2gpu-*).
# libnccl is not carried (218 MB): run.sh uses the GPU machine's (PyTorch's wheel, or the CUDA
# toolkit's). PLUGINS_FROM=<build dir> takes the two plugins from another build of the same ABI
# (their full kernel sets take long to compile on a few cores); BUILD names this build's folder.
# Then, with the device tool: kind nvidia-h100-x2, carry [".gpu-cp"], command "bash .gpu-cp/run.sh".
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD:-build-gpu}"
dest="${DEST:-.gpu-cp}"
run_sh="${RUN_SH:-bench/results/cp-2gpu-2026-11-26/run.sh}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNRT_BUILD_TESTS=ON > /dev/null
targets=(attnrt attnrt_cli attnrt_cp_2gpu_test)
if [ -z "${PLUGINS_FROM:-}" ]; then targets+=(attnrt_flash_attention_2 attnrt_flash_attention_3); fi
cmake --build "$build" --target "${targets[@]}"
plugins="${PLUGINS_FROM:-$build}/lib/attnrt/plugins"
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib/attnrt/plugins"
cp "$build/bin/attnrt_cp_2gpu_test" "$build/bin/attnrt" "$dest/bin/"
cp -a "$build"/lib/libattnrt.so* "$dest/lib/"
for p in flash_attention_2 flash_attention_3; do cp -a "$plugins/$p" "$dest/lib/attnrt/plugins/"; done
for lib in libyaml-cpp.so libfmt.so libspdlog.so libgomp.so.1; do
  path=$(ldd "$build/bin/attnrt_cp_2gpu_test" "$build/bin/attnrt" | awk -v l="$lib" '$1 ~ "^"l {print $3; exit}')
  [ -n "$path" ] && cp -L "$path" "$dest/lib/$(basename "$path")"
done
cp "$run_sh" "$dest/run.sh"
du -sh "$dest"
