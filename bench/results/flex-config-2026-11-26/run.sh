#!/usr/bin/env bash
# Issue 15: flex_attention mods from a config (attnrt.flex.<site>) on the GPU: `attnrt run` of
# configs/examples/flex_document_window.yaml on CUDA (the aux tensor and block mask copied to the
# device; NVRTC compiles the mods), bf16, head_dim 64 and 128, against the fp64 reference with the
# same mods. The example's 8 x 8 block mask is refused on CUDA (its tiles need multiples of 128 x
# 64; call 1 shows the refusal and the fallback chain ending in FAIL), so the block mask is set to
# PyTorch's default 128 x 128 by override. Staged by tools/gpu_stage.sh; device tool: carry [".gpu"], command
# "bash bench/results/flex-config-2026-11-26/run.sh" from the repository root.
cd "$(dirname "$0")/../../.."
chmod -R go-w .gpu 2>/dev/null
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH ATTNRT_CACHE_DIR=/tmp/attnrt_cache
O=${OUT:-/tmp/o}/flexcfg2; mkdir -p $O
for hd in 64 128; do
  for pass in cold warm; do
    timeout 120 .gpu/bin/attnrt run configs/examples/flex_document_window.yaml attnrt.device=cuda \
      workload.head_dim=$hd +workload.dtype=bf16 attnrt.flex.attn_implementation.block_mask.q_block_size=128 \
      attnrt.flex.attn_implementation.block_mask.kv_block_size=128 > $O/run_hd${hd}_$pass.txt 2>&1
    echo "hd$hd $pass rc=$?"; grep -E "flex_attention|passed|error|FAIL|fall" $O/run_hd${hd}_$pass.txt | cut -c1-300
  done
done
cd ${OUT:-/tmp/o} && tar czf flexcfg2.tgz flexcfg2 && rm -rf flexcfg2
