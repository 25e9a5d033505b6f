#!/usr/bin/env bash
# Issue 17, fused split-KV combine, call 2 (from /work/main/.gpu-p17, staged by
# "stage.sh lite fused=<call 1's plugin folder>"):
#   old    main's paged plugin (c7d6b03): splits merged by the combine kernel (PDL on sm_90)
#   fused  call 1's "new": every split call merged by its last split (all threads fence, then CAS)
#   lite   fused only up to 8 splits (1 x 64k's 32 go to the combine kernel), thread 0 alone
#          fences after the barrier (cooperative groups' grid-sync pattern)
# 1. the paged GPU tests on lite at head_dim 64/128/256; compute-sanitizer memcheck and racecheck
#    on the split tests (both combines, the junk-workspace test) and one decode case;
# 2. anchors; attnrt bench --decode (page 16/64, nhd/hnd) old, fused, lite x 3 rounds; the same
#    at 16 x 8k with 300 timed calls x 3 rounds; forced split counts at 16 x 8k; anchors again.
# Everything goes into call2.tgz (the device tool brings back only a few loose files).
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; W=$O/call2; mkdir -p $W
nvidia-smi > $W/gpu.txt 2>&1
log() { echo "[$SECONDS s] $*" | tee -a $W/console.txt; }
log "tests (lite)"
ATTNRT_PLUGIN_PATH=$PWD/variants/lite timeout 150 ./bin/attnrt_gpu_tests --gtest_filter='*Paged*' > $W/paged_tests_lite.txt 2>&1
log "paged tests (lite) rc=$? $(grep -E 'tests? from .* ran|PASSED|FAILED' $W/paged_tests_lite.txt | tail -4 | tr '\n' ' ')"
SUB='PagedGpuSplit.*:Cases/PagedGpu.*/bf16_hd128_decode_gqa4_page16'
export PATH=$PATH:/usr/local/cuda/bin
for tool in memcheck racecheck; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/lite timeout 100 compute-sanitizer --tool $tool --error-exitcode 7 \
    ./bin/attnrt_gpu_tests --gtest_filter="$SUB" > $W/sanitizer_${tool}_lite.txt 2>&1
  log "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $W/sanitizer_${tool}_lite.txt | tr '\n' ' ')"
done
log "anchors 1"
mkdir -p $W/a1; OUT=$W/a1 timeout 100 python3 torch_decode_anchors.py > $W/a1/decode_anchors.txt 2>&1; log "anchors 1 rc=$?"
B="./bin/attnrt bench attnrt.device=cuda --decode --backends paged_attention"
V="old fused lite"
for round in 1 2 3; do for v in $V; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 40 $B --page-size 16,64 --kv-layout nhd,hnd --csv $W/bench_${v}_r$round.csv > $W/bench_${v}_r$round.txt 2>&1
  log "bench $v r$round rc=$?"
done; done
for round in 1 2 3; do for v in $V; do
  ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 40 $B --decode-shapes 16x8192 --iterations 300 --page-size 16,64 --kv-layout nhd,hnd \
    --csv $W/long_${v}_r$round.csv > $W/long_${v}_r$round.txt 2>&1
  log "bench 16x8k x300 $v r$round rc=$?"
done; done
for v in old lite; do for pg in 16 64; do line=""; for s in 2 3 4; do
  ATTNRT_PAGED_SPLITS=$s ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 20 \
    $B --decode-shapes 16x8192 --page-size $pg --gqa 4,8 --csv $W/split_${v}_16x8192_p${pg}_s$s.csv > /dev/null 2>&1
  line="$line s$s=$(grep -h decode $W/split_${v}_16x8192_p${pg}_s$s.csv | cut -d, -f4 | tr '\n' '/')"
done; log "split $v page $pg 16x8192 ms (gqa4/gqa8):$line"; done; done
log "anchors 2"
mkdir -p $W/a2; OUT=$W/a2 timeout 100 python3 torch_decode_anchors.py > $W/a2/decode_anchors.txt 2>&1; log "anchors 2 rc=$?"
# Rounds 1-2 against the first anchors, round 3 and the 300-call rounds against the second.
mkdir -p $W/long
for v in $V; do for round in 1 2 3; do
  a=$W/a1/decode_anchors.csv; [ $round = 3 ] && a=$W/a2/decode_anchors.csv
  python3 decode_ratios.py $W/bench_${v}_r$round.csv $a $W/ratios_${v}_r$round.csv > $W/ratios_${v}_r$round.md 2>&1
  python3 decode_ratios.py $W/long_${v}_r$round.csv $W/a2/decode_anchors.csv $W/long/ratios_${v}_r$round.csv > $W/long/ratios_${v}_r$round.md 2>&1
done; done
python3 ab_table.py $W $V > $W/ab_table.md
python3 ab_table.py $W/long $V > $W/ab_table_16x8k_x300.md
log "done"
tar -czf $O/call2.tgz -C $O call2
cp $W/ab_table.md $W/ab_table_16x8k_x300.md $W/console.txt $O/
cat $W/console.txt; cat $W/ab_table.md; cat $W/ab_table_16x8k_x300.md
