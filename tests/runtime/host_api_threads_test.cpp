// Threads sharing one runtime (issue 23): what host_api.h's threading contract promises, shown
// on the C host API. kWorkers threads resolve different sites and values on one runtime at once
// (its plugin libraries not yet loaded, so the first resolutions race to load them), run CPU
// forward and backward calls on the backends they share and on one handle they all hold, while
// kLifecycle more threads create, use and destroy runtimes of their own. Every status, message,
// backend name and output must equal a single-threaded run's bit for bit. A second test starts
// kFreshRuntimes runtimes whose first resolutions all happen at once, and checks that they share
// one plugin instance per library. tools/test.sh also runs these tests under ThreadSanitizer
// (GCC's, with LLVM's OpenMP runtime and its Archer tool: cmake/AttnrtSanitize.cmake), where any
// report fails them.
#include "host_api_calls.hpp"

#include <attnrt/host_api.h>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/runtime.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <latch>
#include <map>
#include <memory>
#include <optional>
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
using test::poisoned_like;

constexpr int kWorkers = 16;        // threads sharing one runtime
constexpr int kLifecycle = 4;       // threads creating and destroying runtimes beside them
constexpr int kRounds = 2;          // fresh shared runtimes, each worker passing over every job once
constexpr int kFreshRuntimes = 50;  // FirstResolutionsShareOneInstancePerLibrary's runtimes

// A workload's inputs, shared read-only by every thread that runs it.
struct Case {
  std::string name;
  Workload w;
};

std::vector<Case> make_cases() {
  std::vector<Case> cases;
  WorkloadSpec gqa;  // fp32, GQA, causal: every CPU plugin, the C fixture included
  gqa.batch = 2;
  gqa.seqlen_q = 40;
  gqa.heads_q = 4;
  gqa.heads_kv = 2;
  gqa.head_dim = 32;
  gqa.causal = true;
  gqa.seed = 1;
  cases.push_back({"fp32 gqa causal", make_workload(gqa)});
  WorkloadSpec varlen;  // bf16 varlen with a window: the C fixture refuses it (fp32 only)
  varlen.dtype = ATTNRT_DTYPE_BF16;
  varlen.seqlens_q = {17, 33, 9};
  varlen.heads_q = 4;
  varlen.head_dim = 64;
  varlen.window_left = 8;
  varlen.window_right = 0;
  varlen.seed = 2;
  cases.push_back({"bf16 varlen window", make_workload(varlen)});
  WorkloadSpec features;  // softcap, sinks, ALiBi, seqlen_q != seqlen_k
  features.batch = 1;
  features.seqlen_q = 24;
  features.seqlen_k = 48;
  features.heads_q = 4;
  features.head_dim = 32;
  features.softcap = 30.0f;
  features.sinks = true;
  features.alibi = true;
  features.seed = 3;
  cases.push_back({"fp32 softcap sinks alibi", make_workload(features)});
  return cases;
}

// Forward then backward through `backend` on the case's shared inputs, into outputs of this
// call's own (the contract: concurrent calls write distinct outputs).
void call(attnrt_backend_handle* backend, const attnrt_attention_desc& desc, Case& c, int num_threads, Outcome& o) {
  Message err;
  o.out = poisoned_like(c.w.out);
  o.lse = poisoned_like(c.w.lse);
  attnrt_forward_args fa = c.w.forward_args();  // reads c.w's inputs only: shared safely
  fa.out = o.out.dl();
  fa.lse = desc.return_lse ? o.lse.dl() : nullptr;
  o.forward = attnrt_backend_forward(backend, &desc, &fa, num_threads, nullptr, &err.m);
  if (o.forward != ATTNRT_OK) {
    o.message = err.text;
    return;
  }
  o.dq = poisoned_like(c.w.dq);
  o.dk = poisoned_like(c.w.dk);
  o.dv = poisoned_like(c.w.dv);
  o.dsinks = poisoned_like(c.w.dsinks);
  attnrt_backward_args ba = c.w.backward_args();
  ba.out = o.out.dl();
  ba.lse = o.lse.dl();
  ba.dq = o.dq.dl();
  ba.dk = o.dk.dl();
  ba.dv = o.dv.dl();
  ba.dsinks = desc.has_sinks ? o.dsinks.dl() : nullptr;
  o.backward = attnrt_backend_backward(backend, &desc, &ba, num_threads, nullptr, &err.m);
  if (o.backward != ATTNRT_OK) o.message = err.text;
}

// One resolution and its calls: a site, and a value (nullopt: the site's own).
struct Job {
  std::string site;
  std::optional<std::string> value;
  size_t case_index = 0;
  int num_threads = 1;  // OpenMP threads inside the call (the result may depend on it)

  std::string describe(const std::vector<Case>& cases) const {
    return fmt::format("{} = {} on {} ({} threads)", site, value ? *value : "(its value)", cases[case_index].name,
                       num_threads);
  }
};

Outcome run(attnrt_runtime* runtime, const Job& job, std::vector<Case>& cases) {
  Outcome o;
  Case& c = cases[job.case_index];
  attnrt_attention_desc desc = c.w.desc;  // resolve writes its device fields: a copy per call
  Message err;
  attnrt_backend_handle* backend = nullptr;
  o.resolve =
      attnrt_resolve(runtime, job.site.c_str(), job.value ? job.value->c_str() : nullptr, &desc, &backend, &err.m);
  if (o.resolve != ATTNRT_OK) {
    o.message = err.text;
    return o;
  }
  o.backend = attnrt_backend_name(backend);
  call(backend, desc, c, job.num_threads, o);
  attnrt_backend_release(backend);
  return o;
}

// Sites of every kind of value: the default's `auto`, names, an alias, a deprecated alias, a
// hub name found under a plugin directory, a plugin directory's path.
std::vector<std::string> site_overrides() {
  const std::filesystem::path plugins = ATTNRT_TEST_PLUGINS, fixtures = ATTNRT_TEST_FIXTURES;
  return {"attnrt.device=cpu",
          "attnrt.plugin_dirs=['" + (fixtures / "hub").string() + "']",
          "+actor_rollout_ref.model.override_config.attn_implementation=eager",
          "+critic.model.override_config.attn_implementation=math",
          "+ref.model.override_config.attn_implementation=flash_attn_2",
          "+reward.model.override_config.attn_implementation=acme/c_reference",
          "+rollout.override_config.attn_implementation=" + (plugins / "sdpa").string()};
}

std::vector<Job> make_jobs(attnrt_runtime* runtime, const std::vector<Case>& cases) {
  const std::string eager_so = (std::filesystem::path(ATTNRT_TEST_PLUGINS) / "eager" / "libattnrt_eager.so").string();
  std::vector<Job> jobs;
  for (size_t c = 0; c < cases.size(); ++c) {
    for (size_t s = 0; s < attnrt_runtime_site_count(runtime); ++s) {
      jobs.push_back({attnrt_runtime_site_name(runtime, s), std::nullopt, c, 1 + static_cast<int>(jobs.size() % 2)});
    }
    // Values given by the caller, on the default site.
    for (const char* value : {"sdpa", "eager", "acme/c_reference", "flash_attention_3"}) {
      jobs.push_back({"attn_implementation", value, c, 1 + static_cast<int>(jobs.size() % 2)});
    }
    jobs.push_back({"attn_implementation", eager_so, c, 2});
  }
  return jobs;
}

// libattnrt's log callback (host_api.h), installed for one test: counts the messages that say
// which backend a resolution chose. Removed when the test ends, before the counter goes.
struct LogCounter {
  std::atomic<size_t> chosen{0};
  LogCounter() {
    attnrt_set_log_callback(
        [](void* self, attnrt_log_level level, const char* message) {
          if (level == ATTNRT_LOG_INFO && std::strstr(message, ": attention backend: "))
            static_cast<LogCounter*>(self)->chosen.fetch_add(1, std::memory_order_relaxed);
        },
        this, ATTNRT_LOG_DEBUG);
  }
  ~LogCounter() { attnrt_set_log_callback(nullptr, nullptr, ATTNRT_LOG_DEBUG); }
};

TEST(HostApiThreads, SharedRuntimeMatchesSingleThreadedRunBitForBit) {
  // Every resolution logs its choice and fallbacks: here to a callback that counts them, so that
  // the messages are still formatted and delivered on every thread at once, but not printed.
  LogCounter log;
  std::vector<Case> cases = make_cases();
  const std::vector<std::string> overrides = site_overrides();

  // The single-threaded run, on a runtime of its own.
  std::vector<Job> jobs;
  std::vector<Outcome> want;
  {
    HostRuntime serial(overrides);
    ASSERT_EQ(serial.status(), ATTNRT_OK) << serial.message();
    ASSERT_EQ(attnrt_runtime_site_count(serial.get()), 6u);
    jobs = make_jobs(serial.get(), cases);
    for (const Job& job : jobs) want.push_back(run(serial.get(), job, cases));
  }
  // The comparison means something only if the plugins computed: eager and the C fixture ran
  // forward (sdpa needs x86-64-v3 and may fall back to eager), most jobs ran backward too.
  std::vector<std::string> forwards;
  size_t backwards = 0;
  for (const Outcome& o : want) {
    if (o.resolve == ATTNRT_OK && o.forward == ATTNRT_OK) forwards.push_back(o.backend);
    backwards += o.ran_backward() ? 1 : 0;
  }
  for (const char* name : {"eager", "c_reference"}) {
    EXPECT_NE(std::find(forwards.begin(), forwards.end(), name), forwards.end()) << name << " ran nowhere";
  }
  EXPECT_GE(backwards, jobs.size() / 2);

  // A handle every worker holds: resolved on a runtime destroyed before they start (a handle
  // outlives its runtime).
  const Job held_job{"attn_implementation", "eager", 0, 2};
  attnrt_backend_handle* held = nullptr;
  attnrt_attention_desc held_desc = cases[0].w.desc;
  Outcome held_want;
  {
    HostRuntime r(overrides);
    Message err;
    ASSERT_EQ(attnrt_resolve(r.get(), held_job.site.c_str(), held_job.value->c_str(), &held_desc, &held, &err.m),
              ATTNRT_OK)
        << err.text;
    held_want.backend = attnrt_backend_name(held);
  }
  call(held, held_desc, cases[0], held_job.num_threads, held_want);
  ASSERT_EQ(held_want.backward, ATTNRT_OK) << held_want.message;

  // A strict runtime's refusal, for the lifecycle threads.
  std::vector<std::string> strict_overrides = overrides;
  strict_overrides.push_back("attnrt.strict=true");
  const Job strict_job{"attn_implementation", "flash_attention_3", 0, 1};
  Outcome strict_want;
  {
    HostRuntime strict(strict_overrides);
    ASSERT_EQ(strict.status(), ATTNRT_OK) << strict.message();
    strict_want = run(strict.get(), strict_job, cases);
    ASSERT_EQ(strict_want.resolve, ATTNRT_ERROR_UNSUPPORTED);
  }

  // Each round on a fresh shared runtime: the workers' first resolutions load its plugins at once.
  std::vector<std::vector<std::string>> problems(kWorkers + kLifecycle);
  const auto t0 = std::chrono::steady_clock::now();
  for (int round = 0; round < kRounds; ++round) {
    HostRuntime shared(overrides);
    ASSERT_EQ(shared.status(), ATTNRT_OK) << shared.message();
    std::latch start(kWorkers + kLifecycle);
    std::vector<std::thread> threads;
    for (int t = 0; t < kWorkers; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        for (size_t i = 0; i < jobs.size(); ++i) {
          // Each worker walks the jobs from its own place, so different sites and values resolve
          // at the same moment.
          const size_t j = (i + static_cast<size_t>(t) * 5 + static_cast<size_t>(round)) % jobs.size();
          const std::string d = difference(want[j], run(shared.get(), jobs[j], cases));
          if (!d.empty()) problems[t].push_back(jobs[j].describe(cases) + ":" + d);
        }
        Outcome held_got;
        held_got.backend = attnrt_backend_name(held);
        call(held, held_desc, cases[0], held_job.num_threads, held_got);
        if (const std::string d = difference(held_want, held_got); !d.empty())
          problems[t].push_back("the handle all workers hold:" + d);
      });
    }
    for (int t = kWorkers; t < kWorkers + kLifecycle; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        HostRuntime own(overrides);
        if (own.status() != ATTNRT_OK) {
          problems[t].push_back("attnrt_runtime_create: " + own.message());
          return;
        }
        for (size_t i = 0; i < 3; ++i) {
          const size_t j = (static_cast<size_t>(t) * 7 + static_cast<size_t>(round) * 3 + i) % jobs.size();
          const std::string d = difference(want[j], run(own.get(), jobs[j], cases));
          if (!d.empty()) problems[t].push_back("own runtime: " + jobs[j].describe(cases) + ":" + d);
        }
        HostRuntime strict(strict_overrides);
        if (const std::string d = difference(strict_want, run(strict.get(), strict_job, cases)); !d.empty())
          problems[t].push_back("strict runtime:" + d);
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  attnrt_backend_release(held);

  expect_no_problems(problems);
  // Each worker's resolutions each said which backend they chose, to the callback, from its thread.
  EXPECT_GE(log.chosen.load(), static_cast<size_t>(kWorkers) * kRounds * jobs.size());
  const size_t calls = static_cast<size_t>(kWorkers) * kRounds * (jobs.size() + 1);
  std::printf(
      "%d threads on one runtime (%zu resolutions with their forward and backward calls) and %d creating "
      "and destroying runtimes: %.2f s\n",
      kWorkers, calls, kLifecycle, seconds);
  RecordProperty("threads", kWorkers + kLifecycle);
  RecordProperty("seconds", fmt::format("{:.2f}", seconds));
}

// The first resolutions on a fresh runtime, all at once: the moment an unguarded cache breaks.
// The contract (host_api.h) says each library is loaded, and its plugin instance created, once,
// whichever thread asks first: so every thread must get the same Backend for one library,
// whether it names it, reaches it by path or falls back to it. Without the resolver's lock the
// threads that miss the cache together each create an instance of their own (or corrupt the
// cache's map), which this sees even when nothing crashes.
TEST(HostApiThreads, FirstResolutionsShareOneInstancePerLibrary) {
  LogCounter log;
  const std::vector<Case> cases = make_cases();
  const std::filesystem::path plugins = ATTNRT_TEST_PLUGINS;
  // Two values reach eager's library (its name and its path), flash_attention_3 falls back to
  // sdpa (or, on an x86-64 without AVX2, eager).
  const std::vector<std::string> values = {"eager", "sdpa", "acme/c_reference", "flash_attention_3",
                                           (plugins / "eager" / "libattnrt_eager.so").string()};
  RuntimeOptions options;
  options.overrides = site_overrides();
  for (int round = 0; round < kFreshRuntimes; ++round) {
    Runtime runtime(options);
    std::latch start(kWorkers);
    std::vector<std::vector<std::shared_ptr<Backend>>> got(kWorkers,
                                                           std::vector<std::shared_ptr<Backend>>(values.size()));
    std::vector<std::vector<std::string>> libraries(kWorkers, std::vector<std::string>(values.size()));
    std::vector<std::thread> threads;
    for (int t = 0; t < kWorkers; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        for (size_t i = 0; i < values.size(); ++i) {
          const size_t v = (i + static_cast<size_t>(t)) % values.size();
          attnrt_attention_desc desc = cases[0].w.desc;
          runtime.resolver().bind_device(desc);
          const Resolution r = runtime.resolver().resolve("attn_implementation", values[v], desc);
          got[t][v] = r.backend;
          if (r.backend) libraries[t][v] = std::filesystem::weakly_canonical(r.backend->library().path()).string();
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    // One Backend per library: the first thread's, for every value that reaches that library.
    std::map<std::string, Backend*> instance;
    for (int t = 0; t < kWorkers; ++t) {
      for (size_t v = 0; v < values.size(); ++v) {
        ASSERT_NE(got[t][v], nullptr) << "round " << round << ", thread " << t << ": " << values[v]
                                      << " did not resolve";
        auto [it, first] = instance.emplace(libraries[t][v], got[t][v].get());
        EXPECT_EQ(it->second, got[t][v].get()) << "round " << round << ", thread " << t << ": " << values[v]
                                               << " got a second instance of " << libraries[t][v];
      }
    }
  }
}

}  // namespace
}  // namespace attnrt
