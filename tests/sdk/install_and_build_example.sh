#!/usr/bin/env bash
# The SDK promise, end to end: install attnrt into a fresh prefix, build the out-of-tree example
# plugin against that prefix alone, then run and check it through the installed CLI, by name
# (from a plugin folder on ATTNRT_PLUGIN_PATH) and by path.
#   install_and_build_example.sh <attnrt build dir> <attnrt source dir>
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
test -f "$prefix/lib/cmake/attnrt/attnrtConfig.cmake"
test -f "$prefix/lib/pkgconfig/attnrt.pc"

# Only the installed prefix: no path into the attnrt tree except the example's own sources. And
# the SDK needs DLPack alone: yaml-cpp (the runtime's) is hidden from CMake here.
cmake -S "$src/sdk/examples/alibi_attention" -B "$work/example" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_DISABLE_FIND_PACKAGE_yaml-cpp=ON > "$work/configure.log"
cmake --build "$work/example" > "$work/build.log"

# A host asks for the runtime, which brings yaml-cpp: found when it is there, a clear failure
# when it is not.
mkdir -p "$work/host"
cat > "$work/host/CMakeLists.txt" << 'EOF_HOST'
cmake_minimum_required(VERSION 3.22)
project(host LANGUAGES CXX)
find_package(attnrt CONFIG REQUIRED COMPONENTS runtime)
if(NOT TARGET attnrt::runtime)
  message(FATAL_ERROR "find_package(attnrt COMPONENTS runtime) gave no attnrt::runtime")
endif()
EOF_HOST
cmake -S "$work/host" -B "$work/host/with" -DCMAKE_PREFIX_PATH="$prefix" > "$work/host_with.log"
if cmake -S "$work/host" -B "$work/host/without" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_DISABLE_FIND_PACKAGE_yaml-cpp=ON > "$work/host_without.log" 2>&1; then
  echo "COMPONENTS runtime configured without yaml-cpp"
  exit 1
fi
grep -q "yaml-cpp" "$work/host_without.log"
mkdir -p "$work/plugins"
cp -r "$work/example/alibi_attention" "$work/plugins/"

config=$src/sdk/examples/alibi_attention/alibi.yaml
echo "== by name, from a plugin folder on ATTNRT_PLUGIN_PATH"
ATTNRT_PLUGIN_PATH="$work/plugins" "$prefix/bin/attnrt" run "$config" attnrt.strict=true | tee "$work/by_name.txt"
grep -q "attn_implementation  alibi_attention" "$work/by_name.txt"
echo "== by path"
"$prefix/bin/attnrt" run "$config" attnrt.strict=true "attn_implementation=$work/plugins/alibi_attention" | tee "$work/by_path.txt"
grep -q "1 passed, 0 failed" "$work/by_path.txt"
echo "== conformance"
"$prefix/bin/attnrt" check "$work/plugins/alibi_attention"
if command -v pkg-config > /dev/null; then
  flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs attnrt)
  echo "pkg-config: $flags"
  case "$flags" in *"$prefix/lib/pkgconfig/../../include"*) ;; *) echo "pkg-config flags do not point into $prefix"; exit 1 ;; esac
fi
echo "install_and_build_example: OK"
