#!/usr/bin/env bash
# Checks that every tracked C, C++ and CUDA source is formatted by .clang-format (clang-format
# 14, Debian 12's; another major version formats some constructs differently, so it is then
# skipped with a note). `tools/check_format.sh --fix` rewrites the files instead.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format > /dev/null; then
  echo "check_format: clang-format is not installed (apt-get install clang-format); skipped"
  exit 0
fi
major=$(clang-format --version | sed -E 's/.*version ([0-9]+).*/\1/')
if [ "$major" != "14" ]; then
  echo "check_format: clang-format $major is not the tree's version 14; skipped"
  exit 0
fi
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' | grep -v '^tests/fixtures/abi_v1_0/')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run -Werror "${files[@]}" 2> /tmp/attnrt_format.$$; then
  grep -E '^[^ ].*: (error|warning):' /tmp/attnrt_format.$$ | head -n 20
  rm -f /tmp/attnrt_format.$$
  echo "check_format: the files above differ from .clang-format; run tools/check_format.sh --fix"
  exit 1
fi
rm -f /tmp/attnrt_format.$$
echo "check_format: ${#files[@]} files formatted"
