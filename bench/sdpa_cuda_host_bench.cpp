// Host time per call of sdpa on CUDA (cuDNN) on a graph-cache hit, through libattnrt's C host API,
// against a bare kernel launch in the same process (issue 16: goal <= 5 us above the launch).
//
// Each benchmark times what the calling thread spends inside one call (Google Benchmark's manual
// time: steady_clock around the call alone), then drains the stream outside the timed region, so
// that every call starts on an idle stream. Without the drain the calls would queue behind the
// GPU's work and the loop would time the kernels, not the host. Rows:
//   EmptyKernelLaunch            cudaLaunchKernel of an empty kernel (<<<1, 1>>>): the floor
//   forward_with_workspace/...   attnrt_backend_forward_with_workspace: the caller's workspace and
//                                stream, as a framework calls it (PyTorch's allocator)
//   forward/...                  attnrt_backend_forward: the runtime's workspace, kept per stream
//   backward_with_workspace/...  the backward (cuDNN's backward graph: one call, several kernels)
//   cudnn_frontend_execute/...   the cuDNN frontend's Graph::execute on a graph built here, the
//                                dense sdpa case's (sdpa_cudnn_floor.hpp), no attnrt in between:
//                                the floor of sdpa's rows. /pointers: a pointer array in the
//                                frontend's uid order (what the plugin passes); /map: a uid ->
//                                pointer std::unordered_map built per call (what it passed before)
//   direct_forward/...           the plugin's own forward through its function table (an instance
//                                of its own, the same desc, tensors and exec): the plugin's launch
//                                path without libattnrt; forward_with_workspace minus this is what
//                                the runtime adds (issue 19: <= 1 us), this minus EmptyKernelLaunch
//                                what the plugin adds to a launch (issue 19: flash_attention_2's
//                                launch path <= 4 us)
// for sdpa, and for flash_attention_2 (a plugin that launches one kernel per forward: what the host
// API and the tensor checks cost without cuDNN). ATTNRT_HOST_BENCH_HEAD_DIM sets the head_dim of
// every case (default 128; a build with ATTNRT_CUDA_KERNELS=reduced has flash_attention_2's 64). Cases: bf16, head_dim
// 128, batch 2, 8 query and 2 KV heads, causal, 256 tokens per sequence (dense, and varlen with 3 sequences, which adds
// the plugin's offset kernel); small on purpose, the GPU's time is not what is measured.
//
// Every call is checked (a failing status stops that benchmark with the message). Each case is
// called once before its timing starts, so cuDNN's graph is built then: with
// ATTNRT_SDPA_CUDNN_TRACE=1 every graph build prints a line, and this binary prints
// "timing <benchmark>" and "timed <benchmark>" to stderr around each timed loop, so a build
// between them (a cache miss) would show in the log (bench/results/sdpa-cudnn-host-2026-11-23/
// host_bench_summary.py counts them).
//
//   cmake -B build -DATTNRT_BUILD_BENCHMARKS=ON && cmake --build build --target attnrt_sdpa_cuda_host_bench
//   build/bin/attnrt_sdpa_cuda_host_bench --benchmark_min_time=0.05 --benchmark_repetitions=5
#include "empty_kernel.hpp"
#include "sdpa_cudnn_floor.hpp"

#include <attnrt/host_api.h>
#include <attnrt/harness/device_workload.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/plugin_library.hpp>
#include <attnrt/runtime/registry.hpp>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Message {
  char text[4096] = {0};
  attnrt_message m{sizeof(attnrt_message), text, sizeof text};
};

cudaStream_t g_stream = nullptr;
attnrt_runtime* g_runtime = nullptr;

// Times `call` (returns a status) on an idle stream each iteration; stops on the first failure
// with *message (when given).
template <class Call>
void time_calls(benchmark::State& state, const std::string& name, Call&& call, const std::string* message = nullptr) {
  std::fprintf(stderr, "timing %s\n", name.c_str());
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const attnrt_status s = call();
    const auto t1 = Clock::now();
    if (s != ATTNRT_OK) {
      state.SkipWithError(message ? message->c_str() : "the call failed");
      break;
    }
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    if (cudaStreamSynchronize(g_stream) != cudaSuccess) {
      state.SkipWithError("cudaStreamSynchronize failed");
      break;
    }
  }
  std::fprintf(stderr, "timed %s\n", name.c_str());
}

void BM_EmptyKernelLaunch(benchmark::State& state) {
  time_calls(state, "EmptyKernelLaunch", [] {
    return attnrt::bench::launch_empty_kernel(g_stream) == cudaSuccess ? ATTNRT_OK : ATTNRT_ERROR_DEVICE;
  });
}

void BM_CudnnFrontendExecute(benchmark::State& state, const std::string& name, bool map) {
  time_calls(state, name, [map] { return attnrt::bench::cudnn_floor_execute(map) ? ATTNRT_OK : ATTNRT_ERROR_DEVICE; });
}

// One backend resolved for one case, with device tensors and a workspace of the caller's.
class Call {
 public:
  Call(const std::string& backend, bool varlen) {
    attnrt::WorkloadSpec s;
    s.dtype = ATTNRT_DTYPE_BF16;
    const char* hd = std::getenv("ATTNRT_HOST_BENCH_HEAD_DIM");
    s.head_dim = s.head_dim_v = hd ? std::atoi(hd) : 128;
    s.heads_q = 8;
    s.heads_kv = 2;
    s.causal = true;
    s.seed = 16;
    if (varlen) {
      s.seqlens_q = s.seqlens_k = {200, 256, 56};
    } else {
      s.batch = 2;
      s.seqlen_q = s.seqlen_k = 256;
    }
    w_ = attnrt::make_workload(s);
    desc_ = w_.desc;
    Message err;
    if (attnrt_resolve(g_runtime, "attn_implementation", backend.c_str(), &desc_, &handle_, &err.m) != ATTNRT_OK) {
      error_ = err.text;
      return;
    }
    if (std::string(attnrt_backend_name(handle_)) != backend) {
      error_ = backend + " resolved to " + attnrt_backend_name(handle_);
      return;
    }
    w_.desc = desc_;
    dw_ = std::make_unique<attnrt::DeviceWorkload>(w_, desc_.device);
    fa_ = dw_->forward_args();
    ba_ = dw_->backward_args();
    for (int backward : {0, 1}) {
      size_t bytes = 0;
      if (attnrt_backend_workspace_size(handle_, &desc_, backward, 0, &bytes, &err.m) != ATTNRT_OK) {
        error_ = err.text;
        return;
      }
      void*& ws = backward ? ws_backward_ : ws_forward_;
      exec_[backward] = attnrt_exec{sizeof(attnrt_exec), g_stream, nullptr, bytes, 0};
      if (bytes && cudaMalloc(&ws, bytes) != cudaSuccess) {
        error_ = "cudaMalloc of the workspace failed";
        return;
      }
      exec_[backward].workspace = ws;
    }
    // The plugin again, loaded beside the runtime (the same library: dlopen shares it), for calls
    // through its function table with an instance of its own.
    try {
      attnrt::Registry registry(attnrt::Registry::default_search_dirs());
      const attnrt::PluginRecord* record = registry.find(backend, "cuda");
      if (!record) throw std::runtime_error("no plugin " + backend + " for cuda");
      library_ = registry.load(*record);
      attnrt_host_info host{sizeof host, ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR, nullptr, nullptr};
      if (library_->api().create(&host, &instance_, &err.m) != ATTNRT_OK) throw std::runtime_error(err.text);
    } catch (const std::exception& e) {
      error_ = std::string("direct: ") + e.what();
      return;
    }
    // The first calls build cuDNN's graphs (and the runtime's workspace); the timed ones hit.
    if (forward_with_workspace() != ATTNRT_OK || forward() != ATTNRT_OK || backward_with_workspace() != ATTNRT_OK ||
        direct_forward() != ATTNRT_OK || cudaStreamSynchronize(g_stream) != cudaSuccess) {
      error_ = "warm-up: " + message_;
    }
  }
  ~Call() {
    if (ws_forward_) cudaFree(ws_forward_);
    if (ws_backward_) cudaFree(ws_backward_);
    if (handle_) attnrt_backend_release(handle_);
    if (instance_) library_->api().destroy(instance_);
  }
  const std::string& error() const { return error_; }
  const std::string& message() const { return message_; }

  attnrt_status forward_with_workspace() {
    return keep(attnrt_backend_forward_with_workspace(handle_, &desc_, &fa_, &exec_[0], &err_.m));
  }
  attnrt_status direct_forward() { return keep(library_->api().forward(instance_, &desc_, &fa_, &exec_[0], &err_.m)); }
  attnrt_status forward() { return keep(attnrt_backend_forward(handle_, &desc_, &fa_, 0, g_stream, &err_.m)); }
  attnrt_status backward_with_workspace() {
    return keep(attnrt_backend_backward_with_workspace(handle_, &desc_, &ba_, &exec_[1], &err_.m));
  }

 private:
  attnrt_status keep(attnrt_status s) {
    if (s != ATTNRT_OK) message_ = err_.text;
    return s;
  }
  attnrt::Workload w_;
  attnrt_attention_desc desc_{};
  attnrt_backend_handle* handle_ = nullptr;
  std::unique_ptr<attnrt::DeviceWorkload> dw_;
  attnrt_forward_args fa_{};
  attnrt_backward_args ba_{};
  attnrt_exec exec_[2]{};
  std::shared_ptr<attnrt::PluginLibrary> library_;
  attnrt_instance* instance_ = nullptr;
  void *ws_forward_ = nullptr, *ws_backward_ = nullptr;
  Message err_;
  std::string message_, error_;
};

enum class Kind { kForwardWithWorkspace, kForward, kBackwardWithWorkspace, kDirectForward };

void BM_Call(benchmark::State& state, const std::string& name, const std::string& backend, bool varlen, Kind kind) {
  Call c(backend, varlen);
  if (!c.error().empty()) {
    state.SkipWithError(c.error().c_str());
    return;
  }
  switch (kind) {
    case Kind::kForwardWithWorkspace:
      time_calls(
          state, name, [&] { return c.forward_with_workspace(); }, &c.message());
      break;
    case Kind::kForward:
      time_calls(
          state, name, [&] { return c.forward(); }, &c.message());
      break;
    case Kind::kBackwardWithWorkspace:
      time_calls(
          state, name, [&] { return c.backward_with_workspace(); }, &c.message());
      break;
    case Kind::kDirectForward:
      time_calls(
          state, name, [&] { return c.direct_forward(); }, &c.message());
      break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "no CUDA device: this benchmark runs on a GPU\n");
    return 1;
  }
  if (cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking) != cudaSuccess) {
    std::fprintf(stderr, "cudaStreamCreate failed\n");
    return 1;
  }
  const char* overrides[] = {"attnrt.device=cuda:0"};
  Message err;
  if (attnrt_runtime_create(nullptr, overrides, 1, &g_runtime, &err.m) != ATTNRT_OK) {
    std::fprintf(stderr, "attnrt_runtime_create: %s\n", err.text);
    return 1;
  }
  auto setup = [](benchmark::internal::Benchmark* b) { b->UseManualTime()->Unit(benchmark::kMicrosecond); };
  setup(benchmark::RegisterBenchmark("EmptyKernelLaunch", BM_EmptyKernelLaunch));
  if (const std::string why = attnrt::bench::cudnn_floor_setup(g_stream); why.empty()) {
    for (bool map : {false, true}) {
      const std::string name = std::string("cudnn_frontend_execute/") + (map ? "map" : "pointers");
      setup(benchmark::RegisterBenchmark(name.c_str(), BM_CudnnFrontendExecute, name, map));
    }
  } else {
    std::fprintf(stderr, "cudnn_frontend_execute rows left out: %s\n", why.c_str());
  }
  struct Row {
    const char* name;
    Kind kind;
  };
  const Row rows[] = {{"forward_with_workspace", Kind::kForwardWithWorkspace},
                      {"forward", Kind::kForward},
                      {"backward_with_workspace", Kind::kBackwardWithWorkspace},
                      {"direct_forward", Kind::kDirectForward}};
  for (const char* backend : {"sdpa", "flash_attention_2"}) {
    for (bool varlen : {false, true}) {
      for (const Row& r : rows) {
        const std::string name = std::string(r.name) + "/" + backend + "/" + (varlen ? "varlen" : "dense");
        setup(benchmark::RegisterBenchmark(name.c_str(), BM_Call, name, std::string(backend), varlen, r.kind));
      }
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  attnrt_runtime_destroy(g_runtime);
  return 0;
}
