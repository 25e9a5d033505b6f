// CPU attention: attnrt's sdpa plugin against its eager plugin and against PyTorch's CPU
// scaled_dot_product_attention (its flash-attention CPU kernel), on the same shapes, the same
// layout ([batch, seqlen, heads, head_dim]; torch gets a transposed view of the same data) and
// the same thread count, in one run. Counters: TFLOP/s with FlashAttention's formula
// (4 * batch * heads * seqlen^2 * head_dim forward, half when causal; backward 2.5x forward).
// Arguments: seqlen, causal, bf16 (0: fp32). Threads: ATTNRT_BENCH_THREADS, else every core.
// Where PyTorch is not linked (the GPU machine's run), bench/torch_cpu_anchors.py times the same
// rows with the installed torch.
//
//   cmake -B build -DATTNRT_BUILD_BENCHMARKS=ON && cmake --build build --target attnrt_cpu_bench
//   build/bin/attnrt_cpu_bench --benchmark_counters_tabular=true
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/registry.hpp>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <stdexcept>
#include <thread>

#if defined(ATTNRT_BENCH_WITH_TORCH)
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#endif

namespace {

constexpr int kBatch = 1, kHeads = 8, kHeadDim = 64;

int threads() {
  static const int n = [] {
    const char* env = std::getenv("ATTNRT_BENCH_THREADS");
    return env && std::atoi(env) > 0 ? std::atoi(env) : static_cast<int>(std::thread::hardware_concurrency());
  }();
  return n;
}

attnrt::Backend& backend(const std::string& name) {
  // The plugins beside libattnrt (and ATTNRT_PLUGIN_PATH), so a copied build runs elsewhere.
  static attnrt::Registry registry(attnrt::Registry::default_search_dirs());
  static std::map<std::string, std::unique_ptr<attnrt::Backend>> cache;
  auto& b = cache[name];
  if (!b) {
    const attnrt::PluginRecord* record = registry.find(name);
    if (record == nullptr) throw std::runtime_error("plugin '" + name + "' not found beside libattnrt");
    b = std::make_unique<attnrt::Backend>(registry.load(*record));
  }
  return *b;
}

attnrt::Workload workload(int seqlen, bool causal, bool bf16) {
  attnrt::WorkloadSpec s;
  s.batch = kBatch;
  s.seqlen_q = seqlen;
  s.heads_q = kHeads;
  s.head_dim = kHeadDim;
  s.causal = causal;
  s.dtype = bf16 ? ATTNRT_DTYPE_BF16 : ATTNRT_DTYPE_FP32;
  attnrt::Workload w = attnrt::make_workload(s);
  w.desc.device = DLDevice{kDLCPU, 0};
  return w;
}

double forward_flops(int seqlen, bool causal) {
  return 4.0 * kBatch * kHeads * double(seqlen) * seqlen * kHeadDim / (causal ? 2.0 : 1.0);
}

void report(benchmark::State& state, double flops) {
  state.counters["TFLOP/s"] = benchmark::Counter(flops * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = threads();
}

void attnrt_forward(benchmark::State& state, const char* plugin) {
  const int seqlen = static_cast<int>(state.range(0));
  const bool causal = state.range(1) != 0;
  attnrt::Workload w = workload(seqlen, causal, state.range(2) != 0);
  attnrt_forward_args a = w.forward_args();
  attnrt::Backend& b = backend(plugin);
  for (auto _ : state) b.forward(w.desc, a, threads());
  report(state, forward_flops(seqlen, causal));
}

void attnrt_backward(benchmark::State& state, const char* plugin) {
  const int seqlen = static_cast<int>(state.range(0));
  const bool causal = state.range(1) != 0;
  attnrt::Workload w = workload(seqlen, causal, state.range(2) != 0);
  attnrt_forward_args a = w.forward_args();
  attnrt::Backend& b = backend(plugin);
  b.forward(w.desc, a, threads());
  attnrt_backward_args g = w.backward_args();
  for (auto _ : state) b.backward(w.desc, g, threads());
  report(state, 2.5 * forward_flops(seqlen, causal));
}

// One decode step (a query per sequence, causal, bottom-right) of batch 1 over `keys` cached keys,
// 32 query heads on `heads_kv` KV heads, head_dim 128 (Llama 3 8B's attention): bytes/s counts
// the K and V read once.
void BM_sdpa_decode(benchmark::State& state) {
  attnrt::WorkloadSpec s;
  s.batch = 1;
  s.seqlen_q = 1;
  s.seqlen_k = static_cast<int>(state.range(0));
  s.heads_q = 32;
  s.heads_kv = static_cast<int>(state.range(1));
  s.head_dim = 128;
  s.causal = true;
  s.dtype = state.range(2) != 0 ? ATTNRT_DTYPE_BF16 : ATTNRT_DTYPE_FP32;
  attnrt::Workload w = attnrt::make_workload(s);
  w.desc.device = DLDevice{kDLCPU, 0};
  attnrt_forward_args a = w.forward_args();
  attnrt::Backend& b = backend("sdpa");
  for (auto _ : state) b.forward(w.desc, a, threads());
  const double bytes = 2.0 * s.seqlen_k * s.heads_kv * s.head_dim * (state.range(2) != 0 ? 2 : 4);
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = threads();
}
BENCHMARK(BM_sdpa_decode)
    ->ArgNames({"keys", "heads_kv", "bf16"})
    ->ArgsProduct({{4096, 32768}, {1, 8}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(0.5);

void BM_sdpa_forward(benchmark::State& s) { attnrt_forward(s, "sdpa"); }
void BM_eager_forward(benchmark::State& s) { attnrt_forward(s, "eager"); }
void BM_sdpa_backward(benchmark::State& s) { attnrt_backward(s, "sdpa"); }

#if defined(ATTNRT_BENCH_WITH_TORCH)
// The same data as attnrt's [batch, seqlen, heads, head_dim] tensor, viewed as torch's
// [batch, heads, seqlen, head_dim].
at::Tensor torch_view(attnrt::HostTensor& t) {
  const auto& s = t.shape();
  const auto type = t.dtype().code == kDLBfloat ? at::kBFloat16 : at::kFloat;
  return at::from_blob(t.data(), {s[0], s[1], s[2], s[3]}, type).transpose(1, 2);
}

void BM_torch_forward(benchmark::State& state) {
  const int seqlen = static_cast<int>(state.range(0));
  const bool causal = state.range(1) != 0;
  at::set_num_threads(threads());
  attnrt::Workload w = workload(seqlen, causal, state.range(2) != 0);
  at::Tensor q = torch_view(w.q), k = torch_view(w.k), v = torch_view(w.v);
  c10::InferenceMode guard;
  for (auto _ : state) benchmark::DoNotOptimize(at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal));
  report(state, forward_flops(seqlen, causal));
}

void BM_torch_backward(benchmark::State& state) {
  const int seqlen = static_cast<int>(state.range(0));
  const bool causal = state.range(1) != 0;
  at::set_num_threads(threads());
  attnrt::Workload w = workload(seqlen, causal, state.range(2) != 0);
  at::Tensor q = torch_view(w.q), k = torch_view(w.k), v = torch_view(w.v), dout = torch_view(w.dout);
  c10::InferenceMode guard;
  auto [out, lse] = at::_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal);
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        at::_scaled_dot_product_flash_attention_for_cpu_backward(dout, q, k, v, out, lse, 0.0, causal));
  }
  report(state, 2.5 * forward_flops(seqlen, causal));
}
#endif

void shapes(benchmark::internal::Benchmark* b, int max_seqlen) {
  for (int bf16 : {0, 1}) {
    for (int causal : {0, 1}) {
      for (int s = 512; s <= max_seqlen; s *= 2) b->Args({s, causal, bf16});
    }
  }
  b->ArgNames({"seqlen", "causal", "bf16"})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
}

}  // namespace

BENCHMARK(BM_sdpa_forward)->Apply([](auto* b) { shapes(b, 4096); });
#if defined(ATTNRT_BENCH_WITH_TORCH)
BENCHMARK(BM_torch_forward)->Apply([](auto* b) { shapes(b, 4096); });
#endif
// eager materializes seqlen^2 scores per head: timed up to 2048 to keep the run short.
BENCHMARK(BM_eager_forward)->Apply([](auto* b) { shapes(b, 2048); });
BENCHMARK(BM_sdpa_backward)->Apply([](auto* b) { shapes(b, 4096); });
#if defined(ATTNRT_BENCH_WITH_TORCH)
BENCHMARK(BM_torch_backward)->Apply([](auto* b) { shapes(b, 4096); });
#endif

BENCHMARK_MAIN();
