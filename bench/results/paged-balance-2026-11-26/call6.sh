#!/usr/bin/env bash
# Issue 17, the committed plugin (2da062f, staged by tools/gpu_stage.sh's layout): every decode
# shape of the issue, GQA 4 and 8, pages 16 and 64, NHD and HND page layouts, in four rounds
# between three anchor runs (anchors 1, rounds 1-2, anchors 2, rounds 3-4, anchors 3); each round
# joined to the anchor run before it and the one after it by bench/decode_ratios.py. Then the paged
# GPU tests (head_dim 64, 128, 256).
set -u
cd "$(dirname "$0")/../../../.gpu"
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call6; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
B="bin/attnrt bench attnrt.device=cuda --decode --page-size 16,64 --kv-layout nhd,hnd --backends paged_attention"
anchors() { OUT=$O timeout 100 python3 torch_decode_anchors.py > $O/anchors_$1.txt 2>&1; echo "anchors $1 rc=$?"; mv $O/decode_anchors.csv $O/decode_anchors_$1.csv; }
bench() { timeout 90 $B --csv $O/decode_bench_r$1.csv > $O/decode_bench_r$1.txt 2>&1; echo "bench round $1 rc=$?"; }
anchors 1; bench 1; bench 2; anchors 2; bench 3; bench 4; anchors 3
for r in 1 2 3 4; do
  before=$(( r <= 2 ? 1 : 2 )); after=$(( before + 1 ))
  python3 decode_ratios.py $O/decode_bench_r$r.csv $O/decode_anchors_$before.csv > $O/ratios_r${r}_a$before.md
  python3 decode_ratios.py $O/decode_bench_r$r.csv $O/decode_anchors_$after.csv > $O/ratios_r${r}_a$after.md
done
for f in $O/ratios_*.md; do echo "== $f"; grep -E "^\|" $f | awk -F'|' '{print $2 "|" $(NF-1)}' | sed 's/decode_D128_//' | head -40; tail -2 $f; done
timeout 250 bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $O/paged_tests.txt 2>&1; echo "tests rc=$?"
tail -2 $O/paged_tests.txt; grep -c "^\[       OK" $O/paged_tests.txt; grep "FAILED" $O/paged_tests.txt | head -5
cd $O/.. && tar czf call6.tgz call6 && rm -rf call6
