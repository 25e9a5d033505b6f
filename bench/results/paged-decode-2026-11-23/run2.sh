#!/usr/bin/env bash
# paged17's second H100 call for issue 17, after run.sh showed the tensor-core kernel at
# 0.80-0.945x torch cuDNN: the retuned split heuristic, with the kernel's cp.async ring at 2
# stages (lib/, the default build) and at 3 stages (variant_plugins/, ATTNRT_PAGED_STAGES=3),
# each on NHD and HND page layouts, PyTorch's anchors in the same call, and the paged
# correctness tests on both builds.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O/work; mkdir -p $W
B="./bin/attnrt bench attnrt.device=cuda --decode --page-size 16,64,0 --kv-layout nhd,hnd"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $W/gpu.txt 2>&1

timeout 70 $B --backends paged_attention,sdpa --csv $O/decode_bench.csv > $W/decode_bench.txt 2>&1
echo "bench (2 stages) rc=$?"
OUT=$O timeout 90 python3 torch_decode_anchors.py > $W/decode_anchors.txt 2>&1; echo "anchors rc=$?"
grep -v Warning $W/decode_anchors.txt | grep -v "fn = lambda" | head -30
ATTNRT_PLUGIN_PATH=$PWD/variant_plugins timeout 60 $B --backends paged_attention \
  --csv $O/decode_bench_stages3.csv > $W/decode_bench_stages3.txt 2>&1; echo "bench (3 stages) rc=$?"
python3 decode_ratios.py $O/decode_bench.csv $O/decode_anchors.csv > $O/ratios.md 2>&1
python3 decode_ratios.py $O/decode_bench_stages3.csv $O/decode_anchors.csv > $O/ratios_stages3.md 2>&1
cat $O/ratios.md $O/ratios_stages3.md | grep -v "| sdpa" | cut -c1-150

timeout 120 ./bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $O/paged_tests.txt 2>&1; echo "paged tests (2 stages) rc=$?"
grep -E "tests? from .* ran|PASSED|FAILED|Failure" $O/paged_tests.txt | tail -8
ATTNRT_PLUGIN_PATH=$PWD/variant_plugins timeout 120 ./bin/attnrt_gpu_tests --gtest_filter='*Paged*' \
  > $O/paged_tests_stages3.txt 2>&1; echo "paged tests (3 stages) rc=$?"
grep -E "tests? from .* ran|PASSED|FAILED|Failure" $O/paged_tests_stages3.txt | tail -8
tar -czf $O/work.tgz -C $O work
rm -rf $W
