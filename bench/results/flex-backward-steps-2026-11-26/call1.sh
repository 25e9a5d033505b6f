#!/usr/bin/env bash
# Issue 15: the flex backward on flash_attention_3's kernel at hd128 S8192. Three builds of the
# flex_attention and flash_attention_3 plugins, alternated, two rounds (attnrt_flex_bench
# --hdim 128 --seqlen 8192 --backward 1, six mods, 30 timed calls a median):
#   base: main (.gpu/base, first in ATTNRT_PLUGIN_PATH)
#   v2:   the partial-tile select folded into the mask flag (.gpu/v2)
#   v1:   v2, and the consumers read each visited step from the producer's stage (this tree)
# Then ncu on base: the flex causal backward kernel beside flash_attention_3's causal one.
set -u
cd "$(dirname "$0")/../../../.gpu"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache_steps1
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call1; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
ARGS="--hdim 128 --seqlen 8192 --backward 1 --mods causal,dense,sliding_window_256,document_mask,alibi,prefix_lm --reps 30"
for r in 1 2; do
  for v in base v2 v1; do
    if [ $v = v1 ]; then P=; else P=$PWD/$v; fi
    ATTNRT_PLUGIN_PATH=$P timeout 150 bin/attnrt_flex_bench $ARGS --csv $O/${v}_$r.csv > $O/${v}_$r.txt 2>&1; echo "$v $r rc=$?"
  done
done
for f in base_2 v2_2 v1_2; do echo "== $f"; grep backward $O/$f.csv | cut -d, -f1,2,7,8; done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
SEC="--section SpeedOfLight --section WarpStateStats --section InstructionStats --section LaunchStats --section Occupancy --section SchedulerStats --section ComputeWorkloadAnalysis"
ATTNRT_PLUGIN_PATH=$PWD/base timeout 120 $NCU -k regex:attnrt_flex_hopper_backward -c 1 $SEC bin/attnrt_flex_bench --hdim 128 --seqlen 8192 --backward 1 --mods causal --reps 1 > $O/ncu_flex_causal_base.txt 2>&1; echo "ncu flex rc=$?"
ATTNRT_PLUGIN_PATH=$PWD/base timeout 120 $NCU --kernel-name-base demangled -k regex:fa3::backward_kernel -c 1 $SEC bin/attnrt_flex_bench --hdim 128 --seqlen 8192 --backward 1 --mods causal --reps 1 > $O/ncu_fa3_causal_base.txt 2>&1; echo "ncu fa3 rc=$?"
timeout 120 $NCU -k regex:attnrt_flex_hopper_backward -c 1 $SEC bin/attnrt_flex_bench --hdim 128 --seqlen 8192 --backward 1 --mods causal --reps 1 > $O/ncu_flex_causal_v1.txt 2>&1; echo "ncu flex v1 rc=$?"
grep -E "Duration|Executed Instructions |Registers Per|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" $O/ncu_*.txt
cd $O/.. && tar czf call1.tgz call1 && rm -rf call1
