#!/usr/bin/env bash
# Stages the Python package for the GPU machine in .gpu-py/ (as bench/results/python-2026-11-25
# did by hand): the cp312 abi3 wheel of this tree (`pip wheel .`: the extension module, libattnrt
# and the CPU plugins; Python 3.12 as on the GPU machine) unpacked into .gpu-py/python, the CUDA
# plugins of a GPU build copied beside the CPU ones (attnrt/lib/attnrt/plugins/<name>/), and the
# shared libraries the GPU machine (Ubuntu, no installs) lacks in .gpu-py/lib.
#   PYTHON=<python3.12> BUILD_GPU=build-gpu tools/gpu_stage_python.sh [plugin ...]
# Plugins default to flash_attention_2 flash_attention_3 (what tests/gpu/cp_torch_check.py
# runs); BUILD_GPU is a tree tools/gpu_stage.sh built (nvcc, no GPU needed). Then, with the device
# tool: kind nvidia-h100-x2, carry [".gpu-py"], command "bash tools/gpu_cp_check.sh".
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.12}
BUILD_GPU=${BUILD_GPU:-build-gpu}
plugins=("$@")
[ ${#plugins[@]} -gt 0 ] || plugins=(flash_attention_2 flash_attention_3)
for name in "${plugins[@]}"; do
  if [ ! -d "$BUILD_GPU/lib/attnrt/plugins/$name" ]; then
    echo "gpu_stage_python: $BUILD_GPU/lib/attnrt/plugins/$name is missing (tools/gpu_stage.sh builds it)" >&2
    exit 1
  fi
done
rm -rf .whl
"$PY" -m pip wheel -q --no-build-isolation --no-deps -w .whl .
rm -rf .gpu-py
mkdir -p .gpu-py/python .gpu-py/lib
"$PY" -m zipfile -e .whl/attnrt-*-cp312-abi3-*.whl .gpu-py/python
for name in "${plugins[@]}"; do
  cp -a "$BUILD_GPU/lib/attnrt/plugins/$name" .gpu-py/python/attnrt/lib/attnrt/plugins/
done
# The wheel's libattnrt is built with ATTNRT_CUDA=OFF (pyproject.toml), so it has no CUDA kernels
# of its own (the ring's BlockOps: context parallelism on CUDA refuses without them); the GPU
# build's libattnrt is the same source configured with nvcc.
for f in .gpu-py/python/attnrt/lib/libattnrt.so*; do cp -L "$BUILD_GPU/lib/libattnrt.so.0" "$f"; done
# Runtime dependencies from Debian that the GPU machine does not have.
libs=$(ldd .gpu-py/python/attnrt/lib/libattnrt.so .gpu-py/python/attnrt/lib/attnrt/plugins/*/*.so)
for lib in libyaml-cpp.so libfmt.so libspdlog.so libcrypto.so libgomp.so.1; do
  path=$(awk -v l="$lib" '$1 ~ "^"l {print $3; exit}' <<< "$libs")
  [ -n "$path" ] && cp -L "$path" .gpu-py/lib/"$(basename "$path")"
done
# libattnrt refuses plugin files that group or others may write (runtime/src/plugin/file_trust.cpp).
chmod -R go-w .gpu-py
du -sh .gpu-py
