#!/usr/bin/env bash
# Issue 13: ncu of the cases still short of the issue's bars, each beside cuDNN's kernel on the
# same shape (through attnrt's sdpa plugin, which runs cuDNN's fused attention): the forward at
# hd64 S2048 causal (claimed-tile kernel) and the backward at hd128 S4096 full. bf16, 16k
# tokens, hidden 2048 (attnrt bench's shapes). Sections: speed of light, compute pipes (the
# tensor pipe), warp states (stalls), scheduler, occupancy, launch. From .gpu/ (tools/gpu_stage.sh).
set -u
cd "$(dirname "$0")/../../../.gpu"
cudnn_dir=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn_dir:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/fa3prof; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats"
prof() {  # name, kernel regex, count, bench arguments...
  local name=$1 regex=$2 count=$3; shift 3
  timeout 150 $NCU --clock-control none -k "regex:$regex" -c $count $S ./bin/attnrt bench attnrt.device=cuda \
    --warmup 0 --iterations 1 "$@" > $O/ncu_$name.txt 2>&1
  echo "ncu $name rc=$?"
  grep -E "^  [a-z_].*\(|Duration|Compute \(SM\) Throughput|Issue Slots Busy|Executed Ipc Active|Warp Cycles Per Issued|No Eligible|Theoretical Occupancy" $O/ncu_$name.txt | tr -s ' ' | head -24
}
prof fa3_fwd_hd64_S2048_causal forward_kernel 1 --backends flash_attention_3 --hdim 64 --seqlen 2048 --mask causal --no-backward
prof cudnn_fwd_hd64_S2048_causal '^(?!.*(memset|Memset|fill|convert)).*' 1 --backends sdpa --hdim 64 --seqlen 2048 --mask causal --no-backward
prof fa3_bwd_hd128_S4096_full backward_kernel 1 --backends flash_attention_3 --hdim 128 --seqlen 4096 --mask none --no-forward
prof cudnn_bwd_hd128_S4096_full '^(?!.*(memset|Memset|fill|convert|fprop|softmax_d|dq_)).*' 3 --backends sdpa --hdim 128 --seqlen 4096 --mask none --no-forward
cd $O/.. && tar czf fa3prof.tgz fa3prof && rm -rf fa3prof
