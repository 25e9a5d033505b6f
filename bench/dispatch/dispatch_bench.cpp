// What libattnrt adds to one attention call (issue 19: at most 1 microsecond over calling the
// plugin directly). The plugin is bench/dispatch/noop_plugin.c, which returns at once, so every
// row is pure dispatch; the same descriptor and tensors go through each path:
//   direct/...             the plugin's function table, as a host without attnrt would call it
//   cpp_exec/...           attnrt::Backend::forward/backward(desc, args, exec): the C++ API with
//                          the caller's exec (what the host API's _with_workspace calls wrap)
//   cpp/...                attnrt::Backend::forward(desc, args, num_threads, stream): the runtime
//                          asks the plugin for the workspace size and supplies it
//   host_api_workspace/... attnrt_backend_forward_with_workspace / _backward_with_workspace (C)
//   host_api/...           attnrt_backend_forward / _backward (C; the runtime's workspace)
// Cases: bf16, head_dim 128, 16 query and 4 KV heads, causal: dense (batch 2, 1024 tokens) and
// varlen (cu_seqlens of 8 sequences, 8192 tokens, whose offsets the host checks). The runtime's
// part of a row is that row minus direct/ of the same case and direction.
//
//   cmake -B build -DATTNRT_BUILD_BENCHMARKS=ON && cmake --build build --target attnrt_dispatch_bench
//   build/bin/attnrt_dispatch_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <attnrt/host_api.h>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/plugin_library.hpp>
#include <attnrt/runtime/runtime.hpp>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// The noop plugin's folder: the build's, or ATTNRT_DISPATCH_PLUGIN_DIR (a copy run elsewhere).
std::string plugin_dir() {
  const char* env = std::getenv("ATTNRT_DISPATCH_PLUGIN_DIR");
  return env && *env ? env : ATTNRT_DISPATCH_PLUGIN_DIR;
}

struct Message {
  char text[2048] = {0};
  attnrt_message m{sizeof(attnrt_message), text, sizeof text};
};

attnrt::Workload make_case(bool varlen) {
  attnrt::WorkloadSpec s;
  s.dtype = ATTNRT_DTYPE_BF16;
  s.head_dim = s.head_dim_v = 128;
  s.heads_q = 16;
  s.heads_kv = 4;
  s.causal = true;
  s.backward = true;
  s.seed = 19;
  if (varlen) {
    s.seqlens_q = s.seqlens_k = {512, 1536, 1024, 1024, 2048, 512, 1024, 512};
  } else {
    s.batch = 2;
    s.seqlen_q = s.seqlen_k = 1024;
  }
  return attnrt::make_workload(s);
}

// Everything a case's rows share, made once.
struct Fixture {
  attnrt::Workload w[2];  // dense, varlen
  attnrt_forward_args fa[2];
  attnrt_backward_args ba[2];
  std::shared_ptr<attnrt::PluginLibrary> library;
  attnrt_instance* instance = nullptr;
  std::unique_ptr<attnrt::Runtime> runtime;
  std::shared_ptr<attnrt::Backend> backend;
  attnrt_runtime* c_runtime = nullptr;
  attnrt_backend_handle* handle = nullptr;

  Fixture() {
    const std::string dirs = "attnrt.plugin_dirs=[" + plugin_dir() + "]";
    attnrt::RuntimeOptions options;
    options.overrides = {"attnrt.device=cpu", dirs};
    runtime = std::make_unique<attnrt::Runtime>(options);
    for (int c = 0; c < 2; ++c) {
      w[c] = make_case(c == 1);
      const attnrt::Resolution r = runtime->resolver().resolve("attn_implementation", "noop", w[c].desc);
      if (!r.ok() || r.chosen != "noop") throw std::runtime_error("noop did not resolve: " + r.error);
      backend = r.backend;
      runtime->resolver().bind_device(w[c].desc);
      fa[c] = w[c].forward_args();
      ba[c] = w[c].backward_args();
    }
    library = attnrt::PluginLibrary::open(plugin_dir() + "/libattnrt_noop.so");
    attnrt_host_info host{sizeof host, ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR, nullptr, nullptr};
    Message err;
    if (library->api().create(&host, &instance, &err.m) != ATTNRT_OK) throw std::runtime_error(err.text);

    const char* overrides[] = {"attnrt.device=cpu", dirs.c_str()};
    if (attnrt_runtime_create(nullptr, overrides, 2, &c_runtime, &err.m) != ATTNRT_OK)
      throw std::runtime_error(err.text);
    attnrt_attention_desc d = w[0].desc;
    if (attnrt_resolve(c_runtime, "attn_implementation", "noop", &d, &handle, &err.m) != ATTNRT_OK)
      throw std::runtime_error(err.text);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

const attnrt_exec kExec{sizeof(attnrt_exec), nullptr, nullptr, 0, 1};

void check(benchmark::State& state, attnrt_status s, const Message& err) {
  if (s != ATTNRT_OK) state.SkipWithError(err.text[0] ? err.text : "the call failed");
}

void BM_Direct(benchmark::State& state, int c, bool backward) {
  Fixture& f = fixture();
  const attnrt_plugin_api& api = f.library->api();
  Message err;
  for (auto _ : state) {
    const attnrt_status s = backward ? api.backward(f.instance, &f.w[c].desc, &f.ba[c], &kExec, &err.m)
                                     : api.forward(f.instance, &f.w[c].desc, &f.fa[c], &kExec, &err.m);
    if (s != ATTNRT_OK) check(state, s, err);
  }
}

void BM_CppExec(benchmark::State& state, int c, bool backward) {
  Fixture& f = fixture();
  for (auto _ : state) {
    if (backward)
      f.backend->backward(f.w[c].desc, f.ba[c], kExec);
    else
      f.backend->forward(f.w[c].desc, f.fa[c], kExec);
  }
}

void BM_Cpp(benchmark::State& state, int c, bool backward) {
  Fixture& f = fixture();
  for (auto _ : state) {
    if (backward)
      f.backend->backward(f.w[c].desc, f.ba[c], 1);
    else
      f.backend->forward(f.w[c].desc, f.fa[c], 1);
  }
}

void BM_HostApiWorkspace(benchmark::State& state, int c, bool backward) {
  Fixture& f = fixture();
  Message err;
  for (auto _ : state) {
    const attnrt_status s =
        backward ? attnrt_backend_backward_with_workspace(f.handle, &f.w[c].desc, &f.ba[c], &kExec, &err.m)
                 : attnrt_backend_forward_with_workspace(f.handle, &f.w[c].desc, &f.fa[c], &kExec, &err.m);
    if (s != ATTNRT_OK) check(state, s, err);
  }
}

void BM_HostApi(benchmark::State& state, int c, bool backward) {
  Fixture& f = fixture();
  Message err;
  for (auto _ : state) {
    const attnrt_status s = backward ? attnrt_backend_backward(f.handle, &f.w[c].desc, &f.ba[c], 1, nullptr, &err.m)
                                     : attnrt_backend_forward(f.handle, &f.w[c].desc, &f.fa[c], 1, nullptr, &err.m);
    if (s != ATTNRT_OK) check(state, s, err);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  try {
    fixture();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attnrt_dispatch_bench: %s\n", e.what());
    return 1;
  }
  using Fn = void (*)(benchmark::State&, int, bool);
  const std::pair<const char*, Fn> paths[] = {{"direct", BM_Direct},
                                              {"cpp_exec", BM_CppExec},
                                              {"cpp", BM_Cpp},
                                              {"host_api_workspace", BM_HostApiWorkspace},
                                              {"host_api", BM_HostApi}};
  for (int c = 0; c < 2; ++c)
    for (bool backward : {false, true})
      for (const auto& [name, fn] : paths) {
        const std::string row =
            std::string(name) + "/" + (backward ? "backward" : "forward") + "/" + (c ? "varlen" : "dense");
        benchmark::RegisterBenchmark(row.c_str(), fn, c, backward);
      }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
