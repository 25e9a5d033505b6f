#!/usr/bin/env bash
# Stages the A/B folder for the GPU machine (issue 17, fused split-KV combine): the worktree's
# build (build-paged: attnrt, attnrt_gpu_tests, libattnrt, the new paged plugin) beside main's
# build-gpu plugins (the old paged plugin among them, and the CUDA eager, flash_attention_2 and
# sdpa plugins the paged tests compare against), the Debian shared libraries the GPU machine
# lacks, the PyTorch anchors and the call scripts. The device tool copies /work/main's tree, so
# the folder is /work/main/.gpu-p17 (ignored there): carry [".gpu-p17"], run "bash .gpu-p17/callN.sh".
#   variants/old/paged_attention   main's plugin (HEAD c7d6b03: the separate combine kernel)
#   variants/new/paged_attention   this worktree's build-paged plugin
# Arguments NAME=FOLDER add more: variants/NAME/paged_attention copied from FOLDER (a plugin
# folder kept from an earlier build), and NAME alone renames "new" (call 2: fused=<call 1's
# plugin> lite).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wt="$(cd "$here/../../.." && pwd)"
main=/work/main
dst=$main/.gpu-p17
rm -rf "$dst"
built=new
for arg in "$@"; do [[ "$arg" == *=* ]] || built=$arg; done
mkdir -p "$dst/bin" "$dst/lib" "$dst/variants/old" "$dst/variants/$built"
cp "$wt/build-paged/bin/attnrt" "$dst/bin/"
if [ -x "$wt/build-paged/bin/attnrt_gpu_tests" ]; then
  cp "$wt/build-paged/bin/attnrt_gpu_tests" "$dst/bin/"
else
  cp "$main/build-gpu/bin/attnrt_gpu_tests" "$dst/bin/"
fi
cp -a "$wt"/build-paged/lib/libattnrt.so* "$dst/lib/"
mkdir -p "$dst/lib/attnrt/plugins"
for p in eager eager_cuda flash_attention_2 sdpa; do
  cp -a "$main/build-gpu/lib/attnrt/plugins/$p" "$dst/lib/attnrt/plugins/"
done
cp -a "$main/build-gpu/lib/attnrt/plugins/paged_attention" "$dst/variants/old/"
cp -a "$wt/build-paged/lib/attnrt/plugins/paged_attention" "$dst/variants/$built/"
for arg in "$@"; do
  if [[ "$arg" == *=* ]]; then
    mkdir -p "$dst/variants/${arg%%=*}"
    cp -a "${arg#*=}" "$dst/variants/${arg%%=*}/paged_attention"
  fi
done
for lib in libyaml-cpp.so libfmt.so libspdlog.so libgomp.so.1; do
  path=$(ldd "$dst/bin/attnrt" "$main"/build-gpu/lib/attnrt/plugins/sdpa/*.so | awk -v l="$lib" '$1 ~ "^"l {print $3; exit}')
  [ -n "$path" ] && cp -L "$path" "$dst/lib/$(basename "$path")"
done
cp "$wt/bench/torch_decode_anchors.py" "$wt/bench/decode_ratios.py" "$here"/ab_table.py "$here"/call*.sh "$dst/"
du -sh "$dst"
