// The threaded host-API test on the GPU (issue 23; tests/runtime/host_api_threads_test.cpp is
// the CPU one): kThreads threads share one runtime on cuda:0 and the CUDA backends it resolves
// (flash_attention_2 in bf16, CUDA eager in fp32), each thread calling on a CUDA stream of its
// own, with one handle all of them hold, while kLifecycle more create and destroy runtimes of
// their own; every output must equal a single-threaded run's bit for bit. Backward is
// deterministic (flash_attention_2's two-pass dq), so that equality is what a correct run gives.
// Skips, saying why, without a CUDA device or without the CUDA plugins.
#include "host_api_calls.hpp"

#include <attnrt/host_api.h>
#include <attnrt/harness/device_workload.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/device.hpp>

#include <dlfcn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <latch>
#include <string>
#include <thread>
#include <vector>

namespace attnrt {
namespace {

using test::difference;
using test::expect_no_problems;
using test::HostRuntime;
using test::Message;
using test::Outcome;

constexpr int kThreads = 8;    // threads sharing one runtime, a stream each
constexpr int kLifecycle = 2;  // threads creating and destroying runtimes beside them
constexpr int kRounds = 3;

// CUDA streams through the driver API, opened at run time like libattnrt does (this test links
// no CUDA library). Streams are made on the device's primary context, the one libattnrt's memory
// and the plugins' CUDA runtime use. They are blocking streams: the harness's synchronous
// uploads and downloads (legacy default stream) are ordered with their work.
class Streams {
 public:
  Streams() {
    lib_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) {
      error_ = "libcuda.so.1 cannot be opened";
      return;
    }
    bind(cuDeviceGet_, "cuDeviceGet");
    bind(cuDevicePrimaryCtxRetain_, "cuDevicePrimaryCtxRetain");
    bind(cuCtxSetCurrent_, "cuCtxSetCurrent");
    bind(cuStreamCreate_, "cuStreamCreate");
    bind(cuStreamSynchronize_, "cuStreamSynchronize");
    bind(cuStreamDestroy_, "cuStreamDestroy_v2");
    int device = 0;
    if (error_.empty()) check(cuDeviceGet_(&device, 0), "cuDeviceGet");
    if (error_.empty()) check(cuDevicePrimaryCtxRetain_(&context_, device), "cuDevicePrimaryCtxRetain");
  }
  const std::string& error() const { return error_; }

  // A stream of the calling thread (its context made current first).
  void* create() {
    void* stream = nullptr;
    if (cuCtxSetCurrent_(context_) != 0 || cuStreamCreate_(&stream, 0) != 0) return nullptr;
    return stream;
  }
  bool synchronize(void* stream) { return cuStreamSynchronize_(stream) == 0; }
  void destroy(void* stream) { cuStreamDestroy_(stream); }

 private:
  template <class Fn>
  void bind(Fn*& fn, const char* name) {
    fn = reinterpret_cast<Fn*>(dlsym(lib_, name));
    if (fn == nullptr && error_.empty()) error_ = std::string("libcuda.so.1 has no ") + name;
  }
  void check(int result, const char* what) {
    if (result != 0) error_ = fmt::format("{} failed (CUresult {})", what, result);
  }

  void* lib_ = nullptr;
  void* context_ = nullptr;
  std::string error_;
  int (*cuDeviceGet_)(int*, int) = nullptr;
  int (*cuDevicePrimaryCtxRetain_)(void**, int) = nullptr;
  int (*cuCtxSetCurrent_)(void*) = nullptr;
  int (*cuStreamCreate_)(void**, unsigned) = nullptr;
  int (*cuStreamSynchronize_)(void*) = nullptr;
  int (*cuStreamDestroy_)(void*) = nullptr;
};

struct Job {
  std::string name;
  std::string value;  // resolved on the default site
  Workload w;         // inputs, copied per call (each call has device tensors of its own)
};

std::vector<Job> make_jobs() {
  std::vector<Job> jobs;
  WorkloadSpec causal;  // bf16 GQA causal: flash_attention_2
  causal.dtype = ATTNRT_DTYPE_BF16;
  causal.batch = 2;
  causal.seqlen_q = 192;
  causal.heads_q = 8;
  causal.heads_kv = 2;
  causal.head_dim = 64;
  causal.causal = true;
  causal.seed = 11;
  jobs.push_back({"flash_attention_2 bf16 gqa causal", "flash_attention_2", make_workload(causal)});
  WorkloadSpec varlen;  // bf16 varlen with a window: auto's choice (a kernel plugin, not eager)
  varlen.dtype = ATTNRT_DTYPE_BF16;
  varlen.seqlens_q = {100, 37, 256};
  varlen.heads_q = 4;
  varlen.head_dim = 128;
  varlen.window_left = 64;
  varlen.window_right = 0;
  varlen.seed = 12;
  jobs.push_back({"auto bf16 varlen window", "auto", make_workload(varlen)});
  WorkloadSpec eager;  // fp32 softcap and sinks: CUDA eager (flash_attention_2 refuses fp32)
  eager.batch = 2;
  eager.seqlen_q = 96;
  eager.seqlen_k = 160;
  eager.heads_q = 4;
  eager.head_dim = 64;
  eager.softcap = 30.0f;
  eager.sinks = true;
  eager.seed = 13;
  jobs.push_back({"eager fp32 softcap sinks", "eager", make_workload(eager)});
  for (Job& j : jobs) j.w.desc.deterministic = 1;
  return jobs;
}

// Forward and backward through `backend` on device copies of w's inputs, on `stream`.
void call(attnrt_backend_handle* backend, const attnrt_attention_desc& desc, Workload& w, Streams& streams,
          void* stream, Outcome& o) {
  Message err;
  w.desc = desc;
  DeviceWorkload dw(w, desc.device);
  dw.poison_forward_outputs();
  attnrt_forward_args fa = dw.forward_args();
  o.forward = attnrt_backend_forward(backend, &desc, &fa, 0, stream, &err.m);
  if (o.forward != ATTNRT_OK || !streams.synchronize(stream)) {
    o.message = o.forward != ATTNRT_OK ? err.text : "cuStreamSynchronize failed after forward";
    return;
  }
  dw.download_forward_outputs();
  o.out = w.out;
  o.lse = w.lse;
  dw.poison_backward_outputs();
  attnrt_backward_args ba = dw.backward_args();
  o.backward = attnrt_backend_backward(backend, &desc, &ba, 0, stream, &err.m);
  if (o.backward != ATTNRT_OK || !streams.synchronize(stream)) {
    o.message = o.backward != ATTNRT_OK ? err.text : "cuStreamSynchronize failed after backward";
    return;
  }
  dw.download_backward_outputs();
  o.dq = w.dq;
  o.dk = w.dk;
  o.dv = w.dv;
  if (desc.has_sinks) o.dsinks = w.dsinks;
}

Outcome run(attnrt_runtime* runtime, const Job& job, Streams& streams, void* stream) {
  Outcome o;
  Workload w = job.w;
  attnrt_attention_desc desc = w.desc;
  Message err;
  attnrt_backend_handle* backend = nullptr;
  o.resolve = attnrt_resolve(runtime, "attn_implementation", job.value.c_str(), &desc, &backend, &err.m);
  if (o.resolve != ATTNRT_OK) {
    o.message = err.text;
    return o;
  }
  o.backend = attnrt_backend_name(backend);
  call(backend, desc, w, streams, stream, o);
  attnrt_backend_release(backend);
  return o;
}

TEST(HostApiThreadsGpu, StreamPerThreadMatchesSingleThreadedRunBitForBit) {
  const DeviceInventory& inventory = probe_devices();
  if (inventory.cuda.empty()) {
    GTEST_SKIP() << "no CUDA device here (" << inventory.cuda_status
                 << "); this test runs on the GPU machine (tools/gpu_suite.sh)";
  }
  Streams streams;
  if (!streams.error().empty()) GTEST_SKIP() << "CUDA streams unavailable: " << streams.error();
  const std::vector<std::string> overrides = {"attnrt.device=cuda:0"};
  std::vector<Job> jobs = make_jobs();

  // The single-threaded run, on a runtime and a stream of its own.
  std::vector<Outcome> want;
  {
    HostRuntime serial(overrides);
    ASSERT_EQ(serial.status(), ATTNRT_OK) << serial.message();
    void* stream = streams.create();
    ASSERT_NE(stream, nullptr);
    for (const Job& job : jobs) want.push_back(run(serial.get(), job, streams, stream));
    streams.destroy(stream);
  }
  // The auto job takes the device's chain (deterministic: sdpa on cuDNN where it is built, else
  // flash_attention_2): any kernel plugin but eager.
  const char* expected[] = {"flash_attention_2", nullptr, "eager"};
  for (size_t j = 0; j < jobs.size(); ++j) {
    const bool as_expected =
        expected[j] ? want[j].backend == expected[j] : !want[j].backend.empty() && want[j].backend != "eager";
    if (!as_expected) {
      GTEST_SKIP() << jobs[j].name << " resolved to '" << want[j].backend << "', not the CUDA plugin '"
                   << (expected[j] ? expected[j] : "a kernel plugin") << "' (not built here?): " << want[j].message;
    }
    ASSERT_TRUE(want[j].ran_backward()) << jobs[j].name << ": " << want[j].message;
  }

  // A handle every thread holds, resolved on a runtime destroyed before they start.
  attnrt_backend_handle* held = nullptr;
  attnrt_attention_desc held_desc = jobs[0].w.desc;
  {
    HostRuntime r(overrides);
    Message err;
    ASSERT_EQ(attnrt_resolve(r.get(), "attn_implementation", "flash_attention_2", &held_desc, &held, &err.m), ATTNRT_OK)
        << err.text;
  }

  HostRuntime shared(overrides);
  ASSERT_EQ(shared.status(), ATTNRT_OK) << shared.message();
  std::latch start(kThreads + kLifecycle);
  std::vector<std::vector<std::string>> problems(kThreads + kLifecycle);
  std::vector<std::thread> threads;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < kThreads + kLifecycle; ++t) {
    threads.emplace_back([&, t] {
      void* stream = streams.create();
      start.arrive_and_wait();
      if (stream == nullptr) {
        problems[t].push_back("cuStreamCreate failed");
        return;
      }
      for (int round = 0; round < kRounds; ++round) {
        if (t >= kThreads) {  // a runtime of its own, created and destroyed in this thread
          HostRuntime own(overrides);
          const size_t j = static_cast<size_t>(t + round) % jobs.size();
          if (const std::string d = difference(want[j], run(own.get(), jobs[j], streams, stream)); !d.empty())
            problems[t].push_back("own runtime: " + jobs[j].name + ":" + d);
          continue;
        }
        for (size_t i = 0; i < jobs.size(); ++i) {
          const size_t j = (i + static_cast<size_t>(t + round)) % jobs.size();
          if (const std::string d = difference(want[j], run(shared.get(), jobs[j], streams, stream)); !d.empty())
            problems[t].push_back(jobs[j].name + ":" + d);
        }
        Outcome got;
        got.backend = want[0].backend;
        Workload w = jobs[0].w;
        call(held, held_desc, w, streams, stream, got);
        if (const std::string d = difference(want[0], got); !d.empty())
          problems[t].push_back("the handle all threads hold:" + d);
      }
      streams.destroy(stream);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  attnrt_backend_release(held);

  expect_no_problems(problems);
  std::printf("%d threads on one runtime, a CUDA stream each, and %d creating and destroying runtimes: %.2f s\n",
              kThreads, kLifecycle, seconds);
}

}  // namespace
}  // namespace attnrt
