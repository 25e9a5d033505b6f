#!/usr/bin/env bash
# Issue 15, call 2 (the same staged .gpu/ as call 1, plus .gpu/variants/{old,new}/flash_attention_2:
# the plugin of c7d6b03 and this tree's): the flex backward tests call 1's limit cut, all of
# them again; then flash_attention_2's backward before and after the policy hooks (its kernels
# compile the new branches away for the standard policy), alternated twice.
set -u
cd "$(dirname "$0")/../../../.gpu"
cublas_dir=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:$cublas_dir:${LD_LIBRARY_PATH:-}
export ATTNRT_CACHE_DIR=/tmp/attnrt_flex_cache
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call2; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
timeout 200 bin/attnrt_gpu_tests --gtest_filter='Mods/FlexGpu.Backward*' > $O/flex_backward_tests.txt 2>&1
echo "flex backward tests rc=$?"; grep -E "^\[  (PASSED|FAILED)|tests ran|FAILED  \]" $O/flex_backward_tests.txt | head -20
for r in 1 2; do
  for v in new old; do
    ATTNRT_PLUGIN_PATH=$PWD/variants/$v timeout 60 bin/attnrt bench attnrt.device=cuda --backends flash_attention_2 \
      --hdim 64,128 --seqlen 2048,8192 --no-forward --csv $O/fa2_backward_${v}_$r.csv > $O/fa2_backward_${v}_$r.txt 2>&1
    echo "fa2 backward $v $r rc=$?"
  done
done
cd $O/.. && tar czf call2.tgz call2 && rm -rf call2
