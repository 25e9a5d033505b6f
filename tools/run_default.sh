#!/usr/bin/env bash
# The main job from a fresh clone: install dependencies, build, and run attnrt on the embedded
# default configuration (configs/default.yaml: real all-MiniLM-L6-v2 attention inputs, `auto`).
#   tools/run_default.sh [extra attnrt run arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNRT_BUILD_TESTS=OFF > /dev/null
cmake --build build  # runtime, CLI, CPU plugins, and the CUDA plugins when nvcc is found
exec build/bin/attnrt run "$@"
