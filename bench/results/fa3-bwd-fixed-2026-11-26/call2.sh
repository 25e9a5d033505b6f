#!/usr/bin/env bash
# Issue 13: which instructions flash_attention_3's hd128 backward waits at (ncu warp-stall sampling
# per SASS instruction, SourceCounters) at S4096 and S16384 non-causal, and the memory system's
# figures (L2 hit rate, DRAM bytes) beside cuDNN's kernel on the same shapes (through attnrt's sdpa
# plugin). From .gpu/ (tools/gpu_stage.sh). bf16, 16k tokens, hidden 2048.
set -u
cd "$(dirname "$0")/../../../.gpu"
py_lib() { python3 -c "import $1, os; print(os.path.join(list($1.__path__)[0], 'lib'))" 2>/dev/null; }
export LD_LIBRARY_PATH=$PWD/lib:$(py_lib nvidia.cudnn):$(py_lib nvidia.cublas):/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod -R go-w . 2>/dev/null
O=${OUT:-/tmp/o}/call2; mkdir -p $O
nvidia-smi -L > $O/gpu.txt
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
SEC="--section SourceCounters --section WarpStateStats --section SpeedOfLight --section MemoryWorkloadAnalysis"
prof() {  # name, "kernel filter", sass export (0/1), bench args...
  local name=$1 filter=$2 sass=$3; shift 3
  timeout 150 $NCU --clock-control none $filter -c 1 $SEC -o $O/$name bin/attnrt bench attnrt.device=cuda \
    --warmup 0 --iterations 1 --no-forward "$@" > $O/$name.log 2>&1; echo "$name rc=$?"
  [ "$sass" = 1 ] && $NCU -i $O/$name.ncu-rep --page source --print-source sass --csv > $O/${name}_sass.csv 2>/dev/null \
    && gzip -f $O/${name}_sass.csv
  $NCU -i $O/$name.ncu-rep > $O/$name.txt 2>&1
}
FA3="--kernel-name-base demangled -k regex:fa3::backward_kernel"
CUDNN="-k regex:flash_bprop"
prof fa3_S4096 "$FA3" 1 --backends flash_attention_3 --hdim 128 --seqlen 4096 --mask none
prof fa3_S16384 "$FA3" 1 --backends flash_attention_3 --hdim 128 --seqlen 16384 --mask none
prof cudnn_S4096 "$CUDNN" 0 --backends sdpa --hdim 128 --seqlen 4096 --mask none
prof cudnn_S16384 "$CUDNN" 0 --backends sdpa --hdim 128 --seqlen 16384 --mask none
grep -E "Duration|L2 Hit Rate|DRAM Throughput|Mem Busy|Max Bandwidth|L1/TEX Hit|Executed Instructions  |Stall" $O/*.txt | head -80
rm -f $O/*.ncu-rep
cd $O/.. && tar czf call2.tgz call2 && rm -rf call2
