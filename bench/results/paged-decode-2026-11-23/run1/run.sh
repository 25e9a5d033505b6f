#!/usr/bin/env bash
# paged17's one H100 call for issue 17 (paged_attention decode bandwidth), run from a staged
# folder (tools/gpu_stage.sh's layout: bin/, lib/ with libattnrt and the plugins, the anchor and
# ratio scripts; old_plugins/paged_attention is main's kernel before this branch):
#   1. attnrt bench --decode: paged_attention (page 16, 64) and the contiguous backends (page 0)
#      on 1x64k, 16x8k, 64x2k, 256x1k, hd128, 8 KV heads, GQA 4 and 8, bf16, L2 cleared per call
#   2. bench/torch_decode_anchors.py: copy bandwidth, torch cuDNN / flash / efficient, contiguous
#   3. decode_ratios.py: paged / torch cuDNN per shape and page size
#   4. the paged correctness tests (attnrt_gpu_tests --gtest_filter='*Paged*')
#   5. before/after: main's kernel on the same shapes; split counts forced (ATTNRT_PAGED_SPLITS)
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O/work; mkdir -p $W
B="./bin/attnrt bench attnrt.device=cuda --decode"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $W/gpu.txt 2>&1

timeout 80 $B --backends paged_attention,flash_attention_2,flash_attention_3,sdpa --page-size 16,64,0 \
  --csv $O/decode_bench.csv > $W/decode_bench.txt 2>&1; echo "bench rc=$?"
tail -35 $W/decode_bench.txt
OUT=$O timeout 90 python3 torch_decode_anchors.py > $W/decode_anchors.txt 2>&1; echo "anchors rc=$?"
cat $W/decode_anchors.txt
python3 decode_ratios.py $O/decode_bench.csv $O/decode_anchors.csv $O/ratios.csv > $O/ratios.md 2>&1
cat $O/ratios.md

timeout 130 ./bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $O/paged_tests.txt 2>&1; echo "paged tests rc=$?"
grep -E "tests? from .* ran|PASSED|FAILED|Failure" $O/paged_tests.txt | tail -12

timeout 40 $B ++attnrt.plugin_dirs=[$PWD/old_plugins] --backends paged_attention --page-size 16,64 \
  --csv $W/decode_bench_main_kernel.csv > $W/decode_bench_main_kernel.txt 2>&1; echo "main kernel rc=$?"
grep -E "TB/s|n/a" $W/decode_bench_main_kernel.txt | head -20
for s in 1 4 16 64; do
  ATTNRT_PAGED_SPLITS=$s timeout 20 $B --backends paged_attention --page-size 16 \
    --csv $W/decode_bench_splits$s.csv > $W/decode_bench_splits$s.txt 2>&1
done
(cd $W && for s in 1 4 16 64; do sed "1d; s/^/splits$s,/" decode_bench_splits$s.csv; done) > $O/splits.csv
tar -czf $O/work.tgz -C $O work
