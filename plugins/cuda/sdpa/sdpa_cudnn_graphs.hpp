// The process-wide cache of built cuDNN SDPA graphs, keyed by GraphKey (sdpa_graph_key.hpp).
// The only part of the plugin that sees the cuDNN frontend's headers (sdpa_cudnn_graphs.cpp):
// they are heavy, and one translation unit keeps the build quick.
//
// Threads: any number may call at once. A key's entry holds a pool of built graphs; a call
// leases one (building another only when every built one is in use by another thread), so that
// one execution plan never runs on two threads at once (cuDNN does not promise that plans are
// thread-safe; PyTorch keeps its cuDNN attention graphs per thread for the same reason). cuDNN
// handles are per thread and per device, as cuDNN asks; each call binds its own to its stream.
// Graphs and handles live until the process ends (never destroyed at exit, when the CUDA
// context may already be gone).
//
// ATTNRT_SDPA_CUDNN_TRACE=1 writes one line to stderr per graph built: a second call with the
// same key builds nothing (tests/gpu/sdpa_cuda_test.cpp counts the lines).
#pragma once

#include "sdpa_graph_key.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace attnrt::plugins::sdpa_cuda {

// Device pointers of one call, by role; those a graph does not use stay null.
struct GraphPointers {
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  void* out = nullptr;     // forward output; backward input
  float* stats = nullptr;  // lse: forward output (when stats), backward input; [b, h_q, s_q] compact
  const void* dout = nullptr;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
  const float* sinks = nullptr;          // [h_q] (key.sinks)
  float* dsinks = nullptr;               // [h_q], backward output (key.sinks)
  const int32_t* block_table = nullptr;  // [b, max_pages] (key.paged)
  // varlen
  int32_t *seq_len_q = nullptr, *seq_len_kv = nullptr;
  int32_t *ragged_q = nullptr, *ragged_k = nullptr, *ragged_v = nullptr, *ragged_out = nullptr;
  int32_t *ragged_dout = nullptr, *ragged_dq = nullptr, *ragged_dk = nullptr, *ragged_dv = nullptr;
};

// "" when cuDNN builds a graph for `key`, else the reason (prefixed with the cuDNN version).
// Builds the graph on first use (the device `key.device` made current for the build).
std::string graph_support_reason(const GraphKey& key);

// Bytes of workspace the graph of `key` needs. Throws sdk::Error (UNSUPPORTED) with the
// reason when cuDNN cannot build it.
size_t graph_workspace_size(const GraphKey& key);

// Runs the graph of `key` on `stream` with `workspace` (at least graph_workspace_size(key)
// bytes). Throws sdk::Error: UNSUPPORTED (no graph), OUT_OF_MEMORY (workspace too small),
// DEVICE (cuDNN's execution failed, with its message).
void graph_execute(const GraphKey& key, const GraphPointers& p, void* workspace, size_t workspace_bytes,
                   cudaStream_t stream);

// Graphs built by this process so far (every key, every pool).
uint64_t graphs_built();

}  // namespace attnrt::plugins::sdpa_cuda
