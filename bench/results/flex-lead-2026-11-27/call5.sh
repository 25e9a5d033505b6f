#!/usr/bin/env bash
# Issue 15, 2026-11-27 (second session), call 5: hd128 (128-row tiles, where a warpgroup's leading
# skips are rare), whose call 4 times moved by -1% to +6%: main (base), the committed change
# (new), and the change with the leading skips compiled for 192-row tiles only (l192), alternated,
# two rounds; then PyTorch's compiled flex with the same arguments.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call5; mkdir -p $O
trap 'cd $O/.. && tar czf call5.tgz call5 && rm -rf call5' EXIT
nvidia-smi -L > $O/gpu.txt; python3 -c "import torch; print(torch.__version__)" >> $O/gpu.txt
M="--mods causal,document_mask,sliding_window_256,block_sparse_90"
pp() { [ "$1" = new ] && echo "ATTNRT_UNUSED=1" || echo "ATTNRT_PLUGIN_PATH=$PWD/variants/$1"; }
for v in base new l192; do
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 300 bin/attnrt_flex_bench --hdim 128 $M --seqlen 2048 \
    --backward 0 --reps 1 > $O/warm_$v.txt 2>&1 &
done
wait
A="--hdim 128 --seqlen 2048,8192,16384 $M"
for r in 1 2; do for v in base new l192; do
  env $(pp $v) ATTNRT_CACHE_DIR=/tmp/fc_$v timeout 70 bin/attnrt_flex_bench $A --backward 0 --reps 10 \
    --csv $O/hd128_${v}_$r.csv > $O/hd128_${v}_$r.txt 2>&1
  echo "$v $r rc=$?"
done; done
timeout 200 python3 torch_flex_anchors.py $A --csv $O/torch_hd128.csv > $O/torch_hd128.txt 2>&1; echo "torch rc=$?"
for v in base new l192; do python3 flex_ratios.py $O/hd128_${v}_1.csv $O/torch_hd128.csv > $O/ratios_hd128_${v}_1.md 2>&1; done
echo "== backend/mod/S: base_1 new_1 l192_1 base_2 new_2 l192_2 (ms)"
key() { awk -F, 'NR>1{print $1"/"$2"/"$5","$7}' $1 | sort; }
join -t, <(join -t, <(join -t, <(key $O/hd128_base_1.csv) <(key $O/hd128_new_1.csv)) <(key $O/hd128_l192_1.csv)) \
  <(join -t, <(join -t, <(key $O/hd128_base_2.csv) <(key $O/hd128_new_2.csv)) <(key $O/hd128_l192_2.csv))
echo "== torch (ms)"; key $O/torch_hd128.csv
