#!/usr/bin/env bash
# The SDK without CMake, as an outside author meets it (issue 22): install attnrt into a fresh
# prefix; find the guide and the example's sources there; compile every SDK header with nothing
# but `pkg-config --cflags attnrt-plugin` and -Wall -Wextra -Wpedantic -Werror under GCC and
# clang; build the installed example plugin with plain g++ and pkg-config; give it a
# hand-written manifest that names the wrong library (the loader must list the .so files it
# found), then the right one, and pass `attnrt check` (its exports check holds the flags to the
# one exported symbol) and a run by path.
#   build_plugin_without_cmake.sh <attnrt build dir> <attnrt source dir>
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() {
  echo "build_plugin_without_cmake: $*" >&2
  exit 1
}

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
doc=$prefix/share/doc/attnrt
for f in README.md ABI_CHANGELOG.md examples/alibi_attention/alibi_attention.cpp \
  examples/alibi_attention/CMakeLists.txt examples/alibi_attention/alibi.yaml; do
  test -f "$doc/$f" || fail "the install prefix lacks share/doc/attnrt/$f"
done
cflags=$(pkg-config --cflags attnrt-plugin)
libs=$(pkg-config --libs attnrt-plugin)
echo "pkg-config --cflags --libs attnrt-plugin: $cflags $libs"
case "$cflags" in *-std=c++20*) ;; *) fail "attnrt-plugin.pc does not ask for C++20" ;; esac
case "$cflags" in *-fvisibility=hidden*) ;; *) fail "attnrt-plugin.pc does not hide symbols" ;; esac
case "$libs" in *--version-script=*plugin.map*) ;; *) fail "attnrt-plugin.pc has no version script" ;; esac

echo "== the SDK headers, warning-free with only the package's flags"
# GCC compiles at -O3: its false -Wrestrict on std::string (GCC bug 105329) comes from the
# optimizer's inlining. clang's -Wall warnings come from its front end: -fsyntax-only suffices.
for cxx in "g++ -O3 -c -o $work/headers.o" "clang++ -fsyntax-only"; do
  compiler=${cxx%% *}
  command -v "$compiler" > /dev/null || { echo "($compiler not installed: skipped)"; continue; }
  $cxx $cflags -Wall -Wextra -Wpedantic -Werror "$src/tests/sdk/headers_standalone.cpp" \
    || fail "the SDK headers do not compile warning-free with $compiler"
  echo "$compiler: ok"
done

echo "== the installed example, built with g++ and pkg-config alone"
plugin=$work/plugins/alibi_attention
mkdir -p "$plugin"
g++ $cflags -O2 -Wall -Wextra -Werror "$doc/examples/alibi_attention/alibi_attention.cpp" $libs \
  -o "$plugin/libattnrt_alibi_attention.so"

echo "== a hand-written manifest naming the wrong library"
printf 'name: alibi_attention\nversion: "0.1.0"\nlibrary: libalibi_attention.so\n' > "$plugin/plugin.yaml"
if "$prefix/bin/attnrt" check "$plugin" > "$work/wrong.txt" 2>&1; then
  cat "$work/wrong.txt"
  fail "attnrt check passed a manifest that names a missing library"
fi
cat "$work/wrong.txt"
grep -q "libalibi_attention.so: no such file (the .so files in $plugin: libattnrt_alibi_attention.so)" \
  "$work/wrong.txt" || fail "the loader does not list the .so files it found"

echo "== the right manifest: conformance, and a run by path"
printf 'name: alibi_attention\nversion: "0.1.0"\nlibrary: libattnrt_alibi_attention.so\ndevices: [cpu]\n' \
  > "$plugin/plugin.yaml"
"$prefix/bin/attnrt" check "$plugin" | tee "$work/check.txt"
grep -Eq "^exports +PASS +[0-9.]+ +exactly attnrt_plugin_entry" "$work/check.txt" || fail "exports check"
"$prefix/bin/attnrt" run "$doc/examples/alibi_attention/alibi.yaml" attnrt.strict=true \
  "attn_implementation=$plugin" | tee "$work/run.txt"
grep -q "1 passed, 0 failed" "$work/run.txt" || fail "the run by path"
echo "build_plugin_without_cmake: OK"
