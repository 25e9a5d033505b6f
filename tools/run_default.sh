#!/usr/bin/env bash
# The main job from a fresh clone: install dependencies, build, and run attnrt on the embedded
# default configuration (configs/default.yaml: real all-MiniLM-L6-v2 attention inputs, `auto`).
#   tools/run_default.sh [extra attnrt run arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
# Without a GPU the CUDA plugins are built with a few kernel instantiations per family
# (ATTNRT_CUDA_KERNELS=reduced): they compile, and the main job runs on the CPU.
kernels=all
nvidia-smi -L > /dev/null 2>&1 || kernels=reduced
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNRT_BUILD_TESTS=OFF -DATTNRT_CUDA_KERNELS=$kernels > /dev/null
cmake --build build  # runtime, CLI, CPU plugins, and the CUDA plugins when nvcc is found
exec build/bin/attnrt run "$@"
