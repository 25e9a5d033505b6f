#!/usr/bin/env bash
# Issue 17, call 14: the same plugin as call 13: the paged tests at every compiled head dim (64,
# 128, 256: a test binary built with ATTNRT_PAGED_TEST_HEAD_DIMS=64,128,256, as a full GPU build
# sets it), then a third and fourth bench round around a second anchor run.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
timeout 240 ./bin/attnrt_gpu_tests_fullhd --gtest_filter='*Paged*' > $O/paged_tests_all_hd.txt 2>&1
echo "paged tests rc=$?"; grep -E "tests? from .* ran|PASSED|FAILED" $O/paged_tests_all_hd.txt | tail -6
B="./bin/attnrt bench attnrt.device=cuda --decode --page-size 16,64"
timeout 60 $B --backends paged_attention --csv $O/decode_bench_r3.csv > /dev/null 2>&1; echo "bench r3 rc=$?"
mkdir -p $O/a2; OUT=$O/a2 timeout 100 python3 torch_decode_anchors.py > /dev/null 2>&1; echo "anchors rc=$?"; mv $O/a2/decode_anchors.csv $O/decode_anchors_2.csv
timeout 60 $B --backends paged_attention --csv $O/decode_bench_r4.csv > /dev/null 2>&1; echo "bench r4 rc=$?"
for r in r3 r4; do python3 decode_ratios.py $O/decode_bench_$r.csv $O/decode_anchors_2.csv > $O/ratios_$r.md 2>&1; done
paste -d'|' <(grep -E "^\| decode" $O/ratios_r3.md | cut -d'|' -f2,4,6 | sed 's/decode_D128_//') <(grep -E "^\| decode" $O/ratios_r4.md | cut -d'|' -f4,6)
tail -1 $O/ratios_r3.md; tail -1 $O/ratios_r4.md
