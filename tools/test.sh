#!/usr/bin/env bash
# Builds everything with warnings as errors and runs the whole test suite (CTest + GoogleTest),
# then the threaded host-API test under ThreadSanitizer, every CPU test again under
# AddressSanitizer and UndefinedBehaviorSanitizer, each fuzz target for 30 s, then the Python
# package's tests on the wheel that `pip install .` builds (CPU plugins), installed into a virtual
# environment.
#   tools/test.sh [extra ctest arguments]   (given to both ctest runs)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh --python
bash tools/check_format.sh
# Without a GPU the CUDA plugins are compiled (every kernel family) but not run: a few
# instantiations per family are enough (ATTNRT_CUDA_KERNELS=reduced), and keep CI quick.
kernels=all
nvidia-smi -L > /dev/null 2>&1 || kernels=reduced
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNRT_WERROR=ON -DATTNRT_BUILD_TESTS=ON \
  -DATTNRT_CUDA_KERNELS=$kernels > /dev/null
cmake --build build-test
(cd build-test && ctest --output-on-failure -j "$(nproc)" "$@")
# The threaded host-API test again under ThreadSanitizer (issue 23), in a build of its own that
# holds only what the test needs (libattnrt, the CPU plugins, the test); any report fails it
# (exit status 66, tests/support/tsan_options.cpp).
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNRT_WERROR=ON -DATTNRT_BUILD_TESTS=ON \
  -DATTNRT_CUDA=OFF -DATTNRT_SANITIZE=thread > /dev/null
cmake --build build-tsan --target attnrt_threads_tests
build-tsan/bin/attnrt_threads_tests
# Every CPU test again under AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer
# (issue 19), in a build of its own: GCC, -O1, CUDA off, the CPU plugins instrumented too. Any
# report fails the test it is in (cmake/AttnrtSanitize.cmake); the GPU tests skip as in build-test.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNRT_WERROR=ON -DATTNRT_BUILD_TESTS=ON \
  -DATTNRT_CUDA=OFF -DATTNRT_SANITIZE=address > /dev/null
cmake --build build-asan
(cd build-asan && ctest --output-on-failure -j "$(nproc)" "$@")
# The parsers of outside input under libFuzzer, ASan and UBSan (issue 19; fuzz/, clang): 30 s per
# target over the committed seed corpus; a crash, a sanitizer report, an exception other than
# attnrt::Error or a hang fails. Longer runs: tools/fuzz.sh 600 (docs/reliability.md, "Fuzzing").
bash tools/fuzz.sh 30
# The Python package (issue 18), built as a user builds it (pip install ., the CPU plugins only),
# into a virtual environment that sees the system's torch (tools/install_deps.sh installs it).
python3 -m venv --system-site-packages build-python/venv
build-python/venv/bin/python -m pip install -q --no-build-isolation .
(cd tests/python && ../../build-python/venv/bin/python -m pytest -q -p no:cacheprovider)
