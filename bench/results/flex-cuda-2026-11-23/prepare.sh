#!/usr/bin/env bash
# flex_attention's prepare time (the first call shape of a set of mods in a process): a cold
# disk cache (NVRTC compiles) then, in a new process, a warm one (the cubin is read, checked and
# loaded). attnrt_flex_bench, hd128, S2048, the seven mods, twice.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
export ATTNRT_CACHE_DIR=/tmp/attnrt-flex-prepare-cache
rm -rf $ATTNRT_CACHE_DIR
O=${OUT:-/tmp/o}; mkdir -p $O
for pass in cold warm; do
  timeout 100 ./bin/attnrt_flex_bench --hdim 128 --seqlen 2048 --heads 16 --batch 2 --csv $O/prepare_$pass.csv > $O/prepare_$pass.log 2>&1; echo "$pass rc=$?"
  grep flex_attention $O/prepare_$pass.csv | cut -d, -f2,10
done
