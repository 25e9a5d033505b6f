// The floor under sdpa on CUDA's host time (sdpa_cudnn_floor.hpp): one cuDNN SDPA graph built here
// with the cuDNN frontend (the plugin's calls, the host bench's dense case) and executed directly.
#include "sdpa_cudnn_floor.hpp"

#include <cudnn_frontend.h>
#include <dlfcn.h>

#include <memory>
#include <unordered_map>
#include <vector>

namespace cudnn_frontend {
// The frontend's handle to libcudnn in dynamic-loading mode (the plugin sets its own copy).
void* cudnn_dlhandle = nullptr;
}  // namespace cudnn_frontend

namespace attnrt::bench {
namespace {

namespace fe = cudnn_frontend;

struct Floor {
  std::shared_ptr<fe::graph::Graph> graph;
  cudnnHandle_t handle = nullptr;
  void* buffers[5] = {};  // q, k, v, o, stats (uids 1..5)
  void* workspace = nullptr;
};
Floor g_floor;

}  // namespace

std::string cudnn_floor_setup(cudaStream_t stream) {
  void* lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return std::string("dlopen libcudnn.so.9: ") + dlerror();
  fe::cudnn_dlhandle = lib;
  if (fe::detail::create_handle(&g_floor.handle) != CUDNN_STATUS_SUCCESS) return "cudnnCreate failed";
  if (fe::detail::set_stream(g_floor.handle, stream) != CUDNN_STATUS_SUCCESS) return "cudnnSetStream failed";
  const int64_t b = 2, hq = 8, hk = 2, s = 256, d = 128;
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto bshd = [&](const char* name, int64_t uid, int64_t h) {
    return g->tensor(fe::graph::Tensor_attributes()
                         .set_name(name)
                         .set_uid(uid)
                         .set_dim({b, h, s, d})
                         .set_stride({s * h * d, d, h * d, 1}));
  };
  auto q = bshd("q", 1, hq), k = bshd("k", 2, hk), v = bshd("v", 3, hk);
  auto attrs = fe::graph::SDPA_attributes()
                   .set_name("sdpa")
                   .set_generate_stats(true)
                   .set_attn_scale(0.08838834764831845f)
                   .set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)
                   .set_diagonal_band_right_bound(0);
  auto [o, stats] = g->sdpa(q, k, v, attrs);
  o->set_output(true).set_uid(4).set_dim({b, hq, s, d}).set_stride({s * hq * d, d, hq * d, 1});
  stats->set_output(true)
      .set_uid(5)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim({b, hq, s, 1})
      .set_stride({hq * s, s, 1, 1});
  fe::error_t st = g->build(g_floor.handle, {fe::HeurMode_t::A});
  if (!st.is_good()) return "building the graph: " + st.get_message();
  int64_t ws = 0;
  if (!g->get_workspace_size(ws).is_good()) return "get_workspace_size failed";
  const size_t bytes[5] = {size_t(b * s * hq * d * 2), size_t(b * s * hk * d * 2), size_t(b * s * hk * d * 2),
                           size_t(b * s * hq * d * 2), size_t(b * hq * s * 4)};
  for (int i = 0; i < 5; ++i) {
    if (cudaMalloc(&g_floor.buffers[i], bytes[i]) != cudaSuccess) return "cudaMalloc failed";
    cudaMemset(g_floor.buffers[i], 0, bytes[i]);
  }
  if (ws > 0 && cudaMalloc(&g_floor.workspace, size_t(ws)) != cudaSuccess) return "cudaMalloc failed";
  g_floor.graph = g;
  return "";
}

bool cudnn_floor_execute(bool map) {
  if (map) {
    // As the plugin called it before 2026-11-24: a uid -> pointer map built per call.
    std::unordered_map<int64_t, void*> pack;
    for (int64_t uid = 1; uid <= 5; ++uid) pack.emplace(uid, g_floor.buffers[uid - 1]);
    return g_floor.graph->execute(g_floor.handle, pack, g_floor.workspace).is_good();
  }
  // The frontend's cheapest execute: pointers in its sorted-uid order.
  void* ptrs[5];
  for (int i = 0; i < 5; ++i) ptrs[i] = g_floor.buffers[i];
  return g_floor.graph->execute(g_floor.handle, ptrs, 5, g_floor.workspace).is_good();
}

}  // namespace attnrt::bench
