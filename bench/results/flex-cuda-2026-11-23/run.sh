#!/usr/bin/env bash
# flex_attention on the H100: the CUDA plugin's forward grid (NVRTC-compiled mods in
# flash_attention_2's forward) against the fp64 reference under FlashAttention's rule, twice
# (cold: NVRTC compiles every module; warm: the disk cache), its refusals, and flash_attention_2's
# grid at the head dims of this build (its forward mainloop now walks blocks through the policy).
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
export ATTNRT_CACHE_DIR=/tmp/attnrt-flex-cache
O=${OUT:-/tmp/o}; mkdir -p $O
nvidia-smi -L
for pass in cold warm; do
  start=$(date +%s.%N)
  timeout 240 ./bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.*:FlexGpuRefusals.*' > $O/flex_$pass.txt 2>&1; echo "flex $pass rc=$?"
  echo "flex $pass wall $(echo "$(date +%s.%N) - $start" | bc) s" | tee -a $O/flex_$pass.txt
  grep -E "tests? from .* ran|PASSED|FAILED|Failure" $O/flex_$pass.txt | head -12
done
ls -la /tmp/attnrt-flex-cache/flex | head -5; du -sh /tmp/attnrt-flex-cache
timeout 200 ./bin/attnrt_gpu_tests --gtest_filter='Grid/FlashAttention2Grid.*hd64*:Grid/FlashAttention2Grid.*hd256*' > $O/fa2_grid.txt 2>&1; echo "fa2 rc=$?"
grep -E "tests? from .* ran|PASSED|FAILED|Failure" $O/fa2_grid.txt | head -12
