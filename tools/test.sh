#!/usr/bin/env bash
# Builds everything with warnings as errors and runs the whole test suite (CTest + GoogleTest).
#   tools/test.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNRT_WERROR=ON -DATTNRT_BUILD_TESTS=ON > /dev/null
cmake --build build-test
cd build-test
ctest --output-on-failure -j "$(nproc)" "$@"
