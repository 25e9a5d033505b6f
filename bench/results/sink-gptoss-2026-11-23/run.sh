#!/usr/bin/env bash
# sink14 (issue 14): transformers' gpt-oss attention vs attnrt's sink plugin, then sink (with
# sinks) vs flash_attention_3 (no sinks) on gpt-oss shapes, two rounds in alternating order, and
# CUDA eager with sinks at S4k. Carried folder: .gpu-sink14 (bin/attnrt, lib/ with libattnrt and
# the sink, flash_attention_3, eager plugins from main's staged .gpu/, python/attnrt built for 3.12).
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
O=${OUT:-/tmp/o}; mkdir -p $O; R=/tmp/raw; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $R/gpu.txt 2>&1
echo "== hf check"; timeout 100 python3 tests/hf_gptoss_check.py > $O/hf_gptoss_check.txt 2>&1; echo "rc=$?"
grep -v " PASS$" $O/hf_gptoss_check.txt | grep -v "\[info\]" | tail -15
B="./bin/attnrt bench attnrt.device=cuda --hdim 64 --hidden 4096 --heads-kv 8 --mask causal"
one() {  # tag backend-and-window-args... ; writes $R/<tag>.csv
  local tag=$1; shift
  timeout 60 $B "$@" --csv $R/$tag.csv > $R/$tag.txt 2>&1 || echo "$tag rc=$?"
}
round() {  # round number, first backend
  local r=$1 order
  if [ "$2" = sink ]; then order="sink fa3"; else order="fa3 sink"; fi
  for w in full w127; do
    wa=""; [ $w = w127 ] && wa="--window 127"
    for tk in 16k 32k; do
      if [ $tk = 16k ]; then ta="--tokens 16384 --seqlen 4096,8192,16384"; else ta="--tokens 32768 --seqlen 32768"; fi
      for be in $order; do
        [ $SECONDS -gt 370 ] && { echo "deadline: skip r$r $be $w $tk"; continue; }
        if [ $be = sink ]; then one r${r}_${be}_${w}_${tk} --backends sink --sinks $wa $ta
        else one r${r}_${be}_${w}_${tk} --backends flash_attention_3 $wa $ta; fi
      done
    done
  done
}
echo "== round 1 ($SECONDS s)"; round 1 sink
echo "== eager S4k ($SECONDS s)"
for w in full w127; do
  wa=""; [ $w = w127 ] && wa="--window 127"
  one e_eager_$w --backends eager --sinks $wa --tokens 4096 --seqlen 4096 --warmup 1 --iterations 5
  one e_sink_$w --backends sink --sinks $wa --tokens 4096 --seqlen 4096
  one e_fa3_$w --backends flash_attention_3 $wa --tokens 4096 --seqlen 4096
done
echo "== round 2 ($SECONDS s)"; round 2 fa3
echo "== done ($SECONDS s)"
( echo "file,case,backend,pass,ms,tflops,note"
  for f in $(ls $R/*.csv); do tail -n +2 $f | sed "s/^/$(basename $f .csv),/"; done ) > $O/gptoss_bench.csv
tar czf $O/bench_raw.tgz -C $R .
cat $R/gpu.txt; head -3 $R/r1_sink_full_16k.txt
cat $O/gptoss_bench.csv
