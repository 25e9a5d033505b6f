// The floor under sdpa on CUDA's host time (issue 16): the cuDNN frontend's own execute on a graph
// built beforehand, with no attnrt in between (bench/sdpa_cuda_host_bench.cpp's rows
// cudnn_frontend_execute/...). The graph is the host bench's dense sdpa case: bf16, batch 2,
// 8 query and 2 KV heads, 256 tokens, head_dim 128, causal, stats, BSHD strides.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace attnrt::bench {

// Opens libcudnn.so.9 (the loader's search), builds the graph on `stream`'s handle and allocates
// its tensors. "" or the reason it failed.
std::string cudnn_floor_setup(cudaStream_t stream);

// One execute on the built graph: map = true passes a uid -> pointer std::unordered_map built for
// the call (the plugin's former way), false a pointer array in the frontend's uid order.
bool cudnn_floor_execute(bool map);

}  // namespace attnrt::bench
