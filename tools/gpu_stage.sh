#!/usr/bin/env bash
# Builds the GPU suite here (the CUDA toolkit compiles; no GPU needed) and stages a relocatable
# copy in .gpu/ for the GPU machine: bin/ (attnrt, attnrt_gpu_tests), lib/ (libattnrt, plugins,
# and the shared libraries the GPU machine lacks), share/attnrt, the PyTorch anchor script and
# tools/gpu_suite.sh. Then, with the device tool: carry [".gpu"], command "bash .gpu/gpu_suite.sh".
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNRT_BUILD_TESTS=ON > /dev/null
cmake --build build-gpu --target attnrt_cli attnrt_gpu_tests attnrt_eager attnrt_sdpa attnrt_flash_attention_2 attnrt_eager_cuda \
  attnrt_sink attnrt_flash_attention_3 attnrt_paged_attention attnrt_sdpa_cuda \
  attnrt_flex_attention attnrt_flex_attention_cuda
rm -rf .gpu
mkdir -p .gpu/bin .gpu/lib .gpu/share
cp build-gpu/bin/attnrt build-gpu/bin/attnrt_gpu_tests .gpu/bin/
cp -a build-gpu/lib/libattnrt.so* .gpu/lib/
cp -a build-gpu/lib/attnrt .gpu/lib/
cp -a build-gpu/share/attnrt .gpu/share/
# Runtime dependencies from Debian that the GPU machine (Ubuntu, no installs) does not have.
for lib in libyaml-cpp.so libfmt.so libspdlog.so libgomp.so.1; do
  path=$(ldd build-gpu/bin/attnrt build-gpu/lib/attnrt/plugins/sdpa/*.so | awk -v l="$lib" '$1 ~ "^"l {print $3; exit}')
  [ -n "$path" ] && cp -L "$path" .gpu/lib/"$(basename "$path")"
done
cp bench/torch_sdpa_anchors.py bench/torch_decode_anchors.py bench/decode_ratios.py tools/gpu_suite.sh tools/bench_join.py \
  .gpu/
du -sh .gpu
