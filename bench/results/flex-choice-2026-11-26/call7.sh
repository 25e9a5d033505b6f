#!/usr/bin/env bash
# Issue 15, after call 6: the block-sparse forward's producer claims and publishes a tile's
# successor before it loads the tile (three tile slots; 56 producer / 224 consumer registers, two
# consumer warpgroups only), `new` (.gpu's plugins) against eade62b's (`prev`, variants/prev:
# flex_attention_cuda and flash_attention_3, whose forward source it shares; flash_attention_3's
# own kernels keep their loop). attnrt_flex_bench forward hd64 and hd128, S 2k/8k/16k, every mod,
# alternated, two rounds; then flash_attention_3's causal and non-causal forward, new/prev.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call7; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
A="--hdim 64,128 --seqlen 2048,8192,16384 --mods causal,sliding_window_256,prefix_lm,document_mask,alibi,softcap,dense,block_sparse_90 --backward 0 --reps 10"
for r in 1 2; do for v in new prev; do
  P=""; [ $v = prev ] && P=$PWD/variants/prev
  t=$([ $r = 1 ] && echo 170 || echo 100)
  ATTNRT_PLUGIN_PATH=$P ATTNRT_CACHE_DIR=/tmp/fc_$v timeout $t bin/attnrt_flex_bench $A --csv $O/flex_${v}_$r.csv > $O/flex_${v}_$r.txt 2>&1
  echo "$v $r rc=$?"
done; done
paste -d, <(cut -d, -f1,2,5,6 $O/flex_new_2.csv) <(cut -d, -f7 $O/flex_new_1.csv) <(cut -d, -f7 $O/flex_new_2.csv) <(cut -d, -f7 $O/flex_prev_1.csv) <(cut -d, -f7 $O/flex_prev_2.csv)
for v in new prev; do
  P=""; [ $v = prev ] && P=$PWD/variants/prev
  ATTNRT_PLUGIN_PATH=$P timeout 60 bin/attnrt bench attnrt.device=cuda --hdim 64,128 --seqlen 2048,8192 --mask both \
    --backends flash_attention_3 --no-backward --csv $O/fa3_$v.csv > $O/fa3_$v.txt 2>&1; echo "fa3 $v rc=$?"
done
paste -d, $O/fa3_new.csv <(cut -d, -f7- $O/fa3_prev.csv) | head -12
cd $O/.. && tar czf call7.tgz call7 && rm -rf call7
