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

# Only the installed prefix: no path into the attnrt tree except the example's own sources.
cmake -S "$src/sdk/examples/alibi_attention" -B "$work/example" -DCMAKE_PREFIX_PATH="$prefix" > "$work/configure.log"
cmake --build "$work/example" > "$work/build.log"
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
