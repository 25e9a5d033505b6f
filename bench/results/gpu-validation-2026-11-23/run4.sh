#!/usr/bin/env bash
# Session run 4: threads (harness fix), paged_attention, CUDA sdpa (each in its own process), sink random cases, decode bench + anchors.
cd "$(dirname "$0")"
chmod -R go-w . 2>/dev/null
cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))" 2>/dev/null)
cudnn=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/lib:$cudnn:/usr/local/cuda/lib64:$cublas:$LD_LIBRARY_PATH
O=${OUT:-/tmp/o}; mkdir -p $O
T=./bin/attnrt_gpu_tests
s() { grep -E "^\[  FAILED|tests? from .* ran|PASSED" "$1" | tail -${2:-8}; grep -A5 "Failure" "$1" | head -${3:-16}; }
timeout 60 $T --gtest_filter='HostApiThreadsGpu.*' > $O/threads.txt 2>&1; echo "threads rc=$?"; s $O/threads.txt
timeout 150 $T --gtest_filter='*Paged*' > $O/paged.txt 2>&1; echo "paged rc=$?"; s $O/paged.txt 12 30
timeout 90 $T --gtest_filter='Sdpa/*:SdpaCuda.*' > $O/sdpa.txt 2>&1; echo "sdpa rc=$?"; s $O/sdpa.txt 10 20
timeout 90 ./bin/attnrt bench attnrt.device=cuda --decode --backends paged_attention,flash_attention_2 --page-size 16,64,0 --csv $O/decode_bench.csv > /tmp/decode_bench.txt 2>&1; echo "decode rc=$?"; cat /tmp/decode_bench.txt | tail -40
timeout 60 env OUT=$O python3 torch_decode_anchors.py > /tmp/decode_anchors.txt 2>&1; echo "anchors rc=$?"; cat /tmp/decode_anchors.txt | tail -25
timeout 150 $T --gtest_filter='SinkRandom/*' > $O/sink_random.txt 2>&1; echo "sink random rc=$?"; s $O/sink_random.txt 8 20
