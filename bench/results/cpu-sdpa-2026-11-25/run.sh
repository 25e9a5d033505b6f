#!/bin/bash
# CPU sdpa against PyTorch's CPU SDPA on the GPU machine's 16 cores, in one call (issue 19).
# Staged from a build without libtorch (the machine's torch differs from the build machine's):
#   cmake -S . -B build-cpubench -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNRT_BUILD_BENCHMARKS=ON \
#     -DATTNRT_BENCH_TORCH=OFF -DATTNRT_CUDA=OFF -DATTNRT_BUILD_TESTS=OFF
#   cmake --build build-cpubench --target attnrt_cpu_bench
# pkg/: bin/attnrt_cpu_bench, lib/ (libattnrt, lib/attnrt/plugins, and libdnnl.so.2, libgomp,
# libbenchmark, libfmt, libyaml-cpp, libcrypto, libOpenCL from this machine's Debian packages).
cd "$(dirname "$0")"; tar xJf pkg.tar.xz; H=$PWD
export LD_LIBRARY_PATH=$H/pkg/lib
mkdir -p $OUT/cpu; cd $OUT/cpu
lscpu > lscpu.txt
python3 -c "import torch; print(torch.__version__, torch.backends.cpu.get_cpu_capability())" > torch_version.txt
T=${THREADS:-16}
ATTNRT_BENCH_THREADS=$T DNNL_VERBOSE=0 $H/pkg/bin/attnrt_cpu_bench --benchmark_filter='BM_sdpa_(forward|backward)' \
  --benchmark_min_time=0.5 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_format=csv > attnrt_t$T.csv 2> attnrt_t$T.err
python3 $H/torch_cpu_anchors.py --threads $T --min-time 1.5 > torch_t$T.txt 2>&1
