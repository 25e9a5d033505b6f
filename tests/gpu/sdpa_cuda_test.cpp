// sdpa on CUDA (cuDNN's fused attention, plugins/cuda/sdpa) under gpu.md's rule: for out, lse,
// dq, dk, dv its error against the fp64 reference is at most 2x CUDA eager's in the same dtype,
// plus a small floor; fresh random inputs per case, outputs poisoned with NaN, NaN never passes.
// A named grid of every advertised feature, 200 random cases, forward without LSE, the
// deterministic backward repeated bit for bit, the refusals with their reasons, and the graph
// cache: a second call with the same shape builds no cuDNN graph (ATTNRT_SDPA_CUDNN_TRACE).
// Skipped with the reason where there is no GPU.
//
// What made a case slow is host work that needs no GPU: the fp64 reference and cuDNN building
// (compiling) a graph for each new shape, forward, backward and deterministic backward. The grid
// and the random cases therefore prepare their cases first, one case per core (prepare()), and
// then run them on the GPU one after another against what was prepared: the same reference, the
// same cuDNN graphs (taken from the plugin's cache), the same rule.
#include "gpu_support.hpp"

#include <attnrt/harness/device_workload.hpp>
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/run_job.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/backend.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace attnrt {
namespace {

using namespace gpu_test;

// Skips (with the reason) where there is no GPU or no CUDA sdpa plugin.
std::string sdpa_skip_reason() {
  Gpu& gpu = Gpu::get();
  if (!gpu.skip_reason.empty()) return gpu.skip_reason;
  if (!gpu.registry->find("sdpa", "cuda")) return "the CUDA sdpa plugin is not built (cuDNN frontend headers missing)";
  return "";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One case made ready before its GPU run: a fresh random workload (on the test's GPU), its fp64
// references, and sdpa's verdict on it. Asking for the verdict and for the backward workspaces
// (deterministic or not) builds the cuDNN graphs the case's calls use into the plugin's
// process-wide cache, so that the GPU run builds none.
struct Prepared {
  std::string name;
  Workload w;
  ReferenceForward ref;
  ReferenceBackward gref;
  std::string unsupported;  // sdpa's refusal ("" expected)
  std::string error;        // an exception thrown while preparing
  double reference_s = 0, graphs_s = 0;
};

// Host seconds spent preparing, summed over cases (they overlap on the cores), and wall time.
struct PrepareTimes {
  double reference_s = 0, graphs_s = 0, wall_s = 0;
  int threads = 0;
};

// Prepares `cases` on every core, one case per OpenMP thread. The reference's own (sequence,
// head) loop is then a nested region and runs serially inside its thread (OpenMP's default);
// its result does not depend on the thread count (reference.cpp). Builds of different graphs
// run concurrently, each thread on its own cuDNN handle, as the plugin's cache allows.
std::vector<Prepared> prepare(const std::vector<Case>& cases, Backend& sdpa, PrepareTimes* times = nullptr) {
  Gpu& gpu = Gpu::get();
  std::vector<Prepared> out(cases.size());
  const auto t0 = std::chrono::steady_clock::now();
  int threads = 1;
#pragma omp parallel for schedule(dynamic)
  for (size_t i = 0; i < cases.size(); ++i) {
    if (i == 0) threads = omp_get_num_threads();
    Prepared& p = out[i];
    p.name = cases[i].name;
    try {
      p.w = gpu_workload(gpu, cases[i].spec);
      auto t = std::chrono::steady_clock::now();
      attnrt_forward_args host = p.w.forward_args();
      p.ref = reference_forward(p.w.desc, host);
      p.gref = reference_backward(p.w.desc, host, *p.w.dout.dl());
      p.reference_s = seconds_since(t);
      t = std::chrono::steady_clock::now();
      p.unsupported = sdpa.unsupported_reason(p.w.desc);  // the forward graph
      if (p.unsupported.empty()) {
        attnrt_attention_desc d = p.w.desc;
        for (int deterministic : {0, 1}) {  // the backward graphs
          d.deterministic = deterministic;
          sdpa.required_workspace(d, true, 0);
        }
      }
      p.graphs_s = seconds_since(t);
    } catch (const std::exception& e) {
      p.error = e.what();
    }
  }
  if (times) {
    *times = PrepareTimes{};
    for (const Prepared& p : out) {
      times->reference_s += p.reference_s;
      times->graphs_s += p.graphs_s;
    }
    times->wall_s = seconds_since(t0);
    times->threads = threads;
  }
  return out;
}

// Forward and backward of CUDA sdpa against CUDA eager under the rule, then a deterministic
// backward twice, bit for bit.
void check_sdpa(Prepared& p) {
  ASSERT_EQ(p.error, "") << "preparing the case failed";
  Gpu& gpu = Gpu::get();
  Workload& w = p.w;
  const ReferenceForward& ref = p.ref;
  const ReferenceBackward& gref = p.gref;
  Backend& sdpa = *gpu.backend("sdpa");
  ASSERT_EQ(p.unsupported, "");
  const Errors base = run(*gpu.backend("eager"), w, ref, gref);
  const double floor = w.desc.dtype == ATTNRT_DTYPE_BF16 ? 1e-2 : 1e-3;
  // dsinks reads the stored O (in the dtype), as every flash backward does: its baseline is also
  // the error that rounding alone brings (gpu_support.hpp, stored_out_dsinks_error).
  const double stored_out_dsinks = w.desc.has_sinks ? stored_out_dsinks_error(w, ref, gref) : 0.0;
  // (With sinks the deterministic backward is refused: RefusesWithReasons.)
  for (int deterministic : {0, 1}) {
    if (deterministic && w.desc.has_sinks) continue;
    SCOPED_TRACE(deterministic ? "deterministic backward" : "backward");
    w.desc.deterministic = deterministic;
    const Errors got = run(sdpa, w, ref, gref);
    expect_within("out", got.out, base.out, floor);
    expect_within("lse", got.lse, base.lse, 1e-3);
    expect_within("dq", got.dq, base.dq, floor);
    expect_within("dk", got.dk, base.dk, floor);
    expect_within("dv", got.dv, base.dv, floor);
    if (w.desc.has_sinks) {
      const double own_out_dsinks = dsinks_error_from_out(w, w.out, ref, gref);
      expect_within("dsinks", got.dsinks, std::max({base.dsinks, stored_out_dsinks, own_out_dsinks}), floor);
    }
    testing::Test::RecordProperty(deterministic ? "err_dq_deterministic" : "err_dq",
                                  fmt::format("{:.3g} (eager {:.3g})", got.dq, base.dq));
  }
  if (w.desc.has_sinks) {
    w.desc.deterministic = 0;
    return;
  }
  w.desc.deterministic = 1;
  DeviceWorkload dw(w, w.desc.device);
  attnrt_forward_args fa = dw.forward_args();
  sdpa.forward(w.desc, fa, 0);
  attnrt_backward_args ba = dw.backward_args();
  sdpa.backward(w.desc, ba, 0);
  dw.download_backward_outputs();
  const HostTensor dq1 = w.dq, dk1 = w.dk, dv1 = w.dv;
  sdpa.backward(w.desc, ba, 0);
  dw.download_backward_outputs();
  EXPECT_EQ(std::memcmp(dq1.data(), w.dq.data(), dq1.nbytes()), 0) << "dq differs between deterministic repeats";
  EXPECT_EQ(std::memcmp(dk1.data(), w.dk.data(), dk1.nbytes()), 0) << "dk differs between deterministic repeats";
  EXPECT_EQ(std::memcmp(dv1.data(), w.dv.data(), dv1.nbytes()), 0) << "dv differs between deterministic repeats";
}

std::vector<Case> sdpa_grid();

// The grid's cases, prepared together once for the suite (prepare()), by name.
class SdpaCudaGrid : public testing::TestWithParam<Case> {
 public:
  static void SetUpTestSuite() {
    if (!sdpa_skip_reason().empty()) return;
    PrepareTimes t;
    for (Prepared& p : prepare(sdpa_grid(), *Gpu::get().backend("sdpa"), &t)) prepared()[p.name] = std::move(p);
    std::printf(
        "sdpa grid: %zu cases prepared in %.1f s on %d threads (fp64 references %.1f s, cuDNN graph "
        "builds %.1f s, summed over cases)\n",
        prepared().size(), t.wall_s, t.threads, t.reference_s, t.graphs_s);
  }
  static void TearDownTestSuite() { prepared().clear(); }
  static std::map<std::string, Prepared>& prepared() {
    static std::map<std::string, Prepared> cases;
    return cases;
  }
};

TEST_P(SdpaCudaGrid, MatchesEagerRuleForwardAndBackward) {
  if (std::string why = sdpa_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  auto it = SdpaCudaGrid::prepared().find(GetParam().name);
  ASSERT_NE(it, SdpaCudaGrid::prepared().end()) << "not prepared";
  check_sdpa(it->second);
}

// dtype x head_dim x {plain, GQA+causal, causal sq < sk (bottom-right), MQA window, causal
// window, head_dim_v != head_dim, varlen causal GQA, varlen ragged window}.
std::vector<Case> sdpa_grid() {
  std::vector<Case> cases;
  for (attnrt_dtype dt : {ATTNRT_DTYPE_FP16, ATTNRT_DTYPE_BF16}) {
    for (int hd : {64, 96, 128}) {
      const std::string p = fmt::format("{}_hd{}_", dt == ATTNRT_DTYPE_FP16 ? "fp16" : "bf16", hd);
      cases.push_back({p + "plain_256", shape(dt, hd, 2, 256, 256, 4, 4)});
      {
        WorkloadSpec s = shape(dt, hd, 2, 200, 200, 8, 2);
        s.causal = true;
        cases.push_back({p + "gqa4_causal_200", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 1, 113, 203, 4, 2);
        s.causal = true;
        cases.push_back({p + "causal_bottom_right_113x203", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 1, 300, 300, 2, 1);
        s.window_left = 40;
        s.window_right = 17;
        cases.push_back({p + "mqa_window_300", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 2, 160, 160, 4, 4);
        s.causal = true;
        s.window_left = 64;
        cases.push_back({p + "causal_window_160", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 1, 96, 180, 4, 2);
        s.causal = true;
        s.window_left = 31;
        cases.push_back({p + "causal_window_bottom_right_96x180", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 3, 0, 0, 8, 2);
        s.seqlens_q = {37, 250, 129};
        s.seqlens_k = {37, 250, 129};
        s.causal = true;
        cases.push_back({p + "varlen_causal_gqa", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 2, 0, 0, 4, 1);
        s.seqlens_q = {65, 140};
        s.seqlens_k = {90, 153};
        s.window_left = 31;
        s.window_right = 0;
        cases.push_back({p + "varlen_ragged_window", s});
      }
    }
    {
      WorkloadSpec s = shape(dt, 128, 2, 128, 160, 4, 2);
      s.head_dim_v = 64;
      s.causal = true;
      cases.push_back({fmt::format("{}_hd128_v64_causal", dt == ATTNRT_DTYPE_FP16 ? "fp16" : "bf16"), s});
    }
    // gpt-oss's attention: sinks with GQA, causal, and a sliding window (128 keys there).
    for (int hd : {64, 128}) {
      const std::string p = fmt::format("{}_hd{}_sinks_", dt == ATTNRT_DTYPE_FP16 ? "fp16" : "bf16", hd);
      {
        WorkloadSpec s = shape(dt, hd, 2, 256, 256, 8, 2);
        s.sinks = true;
        cases.push_back({p + "plain_256", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 2, 200, 300, 8, 1);
        s.sinks = true;
        s.causal = true;
        cases.push_back({p + "gqa8_causal_bottom_right_200x300", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 1, 320, 320, 8, 2);
        s.sinks = true;
        s.causal = true;
        s.window_left = 127;
        cases.push_back({p + "causal_window_127", s});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Sdpa, SdpaCudaGrid, testing::ValuesIn(sdpa_grid()),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.name; });

// 200 random cases over every advertised feature (dtype, head_dim, GQA/MQA, causal, windows,
// seqlen_q <= seqlen_k, varlen), each under the rule. The shapes come from one seeded stream,
// so a failure names a case that can be rerun (the test goes on past a failing case, up to ten).
// Prepared in batches (prepare()) to bound the memory the references take.
TEST(SdpaCudaRandom, TwoHundredCasesMatchEagerRule) {
  if (std::string why = sdpa_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  std::mt19937 rng(20261124);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  // Sinks from a stream of their own (the shapes' stream stays as it was validated): a third of
  // the cases that cuDNN takes them with, more than one query row and not varlen (cuDNN 9.26+).
  std::mt19937 sink_rng(20261125);
  std::vector<Case> cases;
  for (int c = 0; c < 200; ++c) {
    const attnrt_dtype dt = pick(0, 1) ? ATTNRT_DTYPE_BF16 : ATTNRT_DTYPE_FP16;
    const int hd = std::array<int, 4>{32, 64, 96, 128}[pick(0, 3)];
    const int hkv = pick(1, 3), group = std::array<int, 3>{1, 2, 4}[pick(0, 2)];
    const int batch = pick(1, 3);
    // cuDNN: bottom-right masks need seqlen_q <= seqlen_k. One query and one key (seqlen_q =
    // seqlen_k = 1) has no cuDNN backward and is refused (SdpaCuda.RefusesWithReasons): such a
    // draw takes seqlen_k 2 instead (the stream of draws stays as it was for every other case).
    int sk = pick(1, 260);
    const int sq = pick(1, sk);
    if (sk == 1) sk = 2;
    WorkloadSpec s = shape(dt, hd, batch, sq, sk, hkv * group, hkv);
    s.seed = 1000 + c;
    s.causal = pick(0, 1);
    if (pick(0, 2) == 0) s.window_left = pick(0, 100);
    if (!s.causal && pick(0, 2) == 0) s.window_right = pick(0, 50);
    if (pick(0, 3) == 0) {  // varlen, each sequence seqlen_q <= seqlen_k
      s.seqlens_q.clear();
      s.seqlens_k.clear();
      for (int b = 0; b < batch; ++b) {
        const int k = pick(1, 260);
        s.seqlens_k.push_back(k);
        s.seqlens_q.push_back(pick(1, k));
      }
      if (*std::max_element(s.seqlens_k.begin(), s.seqlens_k.end()) == 1) s.seqlens_k[0] = 2;  // as above
      s.seqlen_q = s.seqlen_k = 0;
    }
    s.sinks = std::uniform_int_distribution<int>(0, 2)(sink_rng) == 0 && s.seqlens_q.empty() && sq > 1;
    cases.push_back({fmt::format("random case {}: {} hd {} batch {} sq {} sk {} heads {}/{} causal {} window {} {} "
                                 "varlen {} sinks {}",
                                 c, dt == ATTNRT_DTYPE_BF16 ? "bf16" : "fp16", hd, batch, sq, sk, hkv * group, hkv,
                                 s.causal, s.window_left, s.window_right, !s.seqlens_q.empty(), s.sinks),
                     s});
  }
  Backend& sdpa = *Gpu::get().backend("sdpa");
  constexpr size_t kBatch = 50;
  PrepareTimes total;
  double gpu_s = 0;
  int failing_cases = 0;
  for (size_t first = 0; first < cases.size(); first += kBatch) {
    const std::vector<Case> batch(cases.begin() + first, cases.begin() + std::min(cases.size(), first + kBatch));
    PrepareTimes t;
    std::vector<Prepared> prepared = prepare(batch, sdpa, &t);
    total.reference_s += t.reference_s;
    total.graphs_s += t.graphs_s;
    total.wall_s += t.wall_s;
    total.threads = t.threads;
    const auto t0 = std::chrono::steady_clock::now();
    for (Prepared& p : prepared) {
      SCOPED_TRACE(p.name);
      const int parts = testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
      check_sdpa(p);
      if (testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count() > parts &&
          ++failing_cases == 10) {
        return;  // each failing case is named above; ten are enough to go on
      }
    }
    gpu_s += seconds_since(t0);
    std::printf(
        "sdpa random: cases %zu-%zu prepared in %.1f s (references %.1f s, graph builds %.1f s, summed), "
        "checked on the GPU in %.1f s\n",
        first, first + batch.size() - 1, t.wall_s, t.reference_s, t.graphs_s, seconds_since(t0));
    std::fflush(stdout);
  }
  std::printf(
      "sdpa random: %zu cases prepared in %.1f s on %d threads (fp64 references %.1f s, cuDNN graph "
      "builds %.1f s, summed over cases), checked on the GPU in %.1f s\n",
      cases.size(), total.wall_s, total.threads, total.reference_s, total.graphs_s, gpu_s);
  RecordProperty("prepare_s", fmt::format("{:.1f}", total.wall_s));
  RecordProperty("gpu_s", fmt::format("{:.1f}", gpu_s));
}

// The forward alone without LSE (cuDNN's inference graph, no Stats) against eager's out.
TEST(SdpaCuda, ForwardWithoutLse) {
  if (std::string why = sdpa_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  for (attnrt_dtype dt : {ATTNRT_DTYPE_FP16, ATTNRT_DTYPE_BF16}) {
    WorkloadSpec s = shape(dt, 128, 2, 256, 256, 8, 2);
    s.causal = true;
    Workload w = gpu_workload(gpu, s);
    attnrt_forward_args host = w.forward_args();
    const ReferenceForward ref = reference_forward(w.desc, host);
    const Errors base = run_forward(*gpu.backend("eager"), w, ref);
    w.desc.return_lse = 0;
    DeviceWorkload dw(w, w.desc.device);
    attnrt_forward_args fa = dw.forward_args();
    fa.lse = nullptr;
    dw.poison_forward_outputs();
    gpu.backend("sdpa")->forward(w.desc, fa, 0);
    dw.download_forward_outputs();
    expect_within("out", max_abs_error(*w.out.dl(), ref.out), base.out, dt == ATTNRT_DTYPE_BF16 ? 1e-2 : 1e-3);
  }
}

// A second call with the same shape builds no cuDNN graph: the plugin writes one trace line
// per graph it builds (ATTNRT_SDPA_CUDNN_TRACE), and the second forward and backward write none.
TEST(SdpaCuda, SecondCallWithTheSameShapeBuildsNoGraph) {
  if (std::string why = sdpa_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  const ScopedEnv trace("ATTNRT_SDPA_CUDNN_TRACE", "1");
  WorkloadSpec s = shape(ATTNRT_DTYPE_BF16, 64, 1, 333, 333, 3, 3);  // a shape no other test uses
  s.causal = true;
  Workload w = gpu_workload(gpu, s);
  Backend& sdpa = *gpu.backend("sdpa");
  DeviceWorkload dw(w, w.desc.device);
  auto call = [&] {
    testing::internal::CaptureStderr();
    attnrt_forward_args fa = dw.forward_args();
    sdpa.forward(w.desc, fa, 0);
    attnrt_backward_args ba = dw.backward_args();
    sdpa.backward(w.desc, ba, 0);
    const std::string err = testing::internal::GetCapturedStderr();
    int built = 0;
    for (size_t at = err.find("built graph #"); at != std::string::npos; at = err.find("built graph #", at + 1)) {
      ++built;
    }
    return built;
  };
  EXPECT_EQ(call(), 2) << "the first call builds a forward and a backward graph";
  EXPECT_EQ(call(), 0) << "the second call builds nothing";
  EXPECT_EQ(call(), 0);
}

// Refusals with their reasons (the runtime then falls back), and cuDNN's version named in them.
TEST(SdpaCuda, RefusesWithReasons) {
  if (std::string why = sdpa_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  Backend& sdpa = *gpu.backend("sdpa");
  Workload w = gpu_workload(gpu, shape(ATTNRT_DTYPE_BF16, 64, 1, 64, 64, 2, 2));
  EXPECT_EQ(sdpa.unsupported_reason(w.desc), "");
  auto refused = [&](auto mutate, const char* needle) {
    attnrt_attention_desc d = w.desc;
    mutate(d);
    const std::string why = sdpa.unsupported_reason(d);
    EXPECT_NE(why.find(needle), std::string::npos) << "reason was: '" << why << "'";
  };
  refused([](attnrt_attention_desc& d) { d.softcap = 2.0f; }, "softcap");
  refused([](attnrt_attention_desc& d) { d.has_alibi = 1; }, "ALiBi");
  // Sinks are cuDNN's sink_token, except where its validation refuses them: one query row
  // (its "decode only" mode), and varlen before cuDNN 9.26 (its ragged backward).
  EXPECT_EQ(sdpa.unsupported_reason([&] {
    attnrt_attention_desc d = w.desc;
    d.has_sinks = 1;
    return d;
  }()),
            "");
  refused(
      [](attnrt_attention_desc& d) {
        d.has_sinks = 1;
        d.seqlen_q = 1;
      },
      "sink_token");
  refused(
      [](attnrt_attention_desc& d) {
        d.has_sinks = 1;
        d.deterministic = 1;
      },
      "deterministic backward with sinks");
  {
    Workload v = gpu_workload(gpu, [] {
      WorkloadSpec s = shape(ATTNRT_DTYPE_BF16, 64, 2, 0, 0, 4, 2);
      s.seqlens_q = {30, 64};
      s.seqlens_k = {40, 64};
      s.sinks = true;
      return s;
    }());
    const std::string why = sdpa.unsupported_reason(v.desc);
    EXPECT_TRUE(why.empty() || why.find("sinks with varlen need cuDNN 9.26") != std::string::npos) << why;
  }
  refused([](attnrt_attention_desc& d) { d.dtype = ATTNRT_DTYPE_FP32; }, "dtype fp32");
  refused([](attnrt_attention_desc& d) { d.head_dim = d.head_dim_v = 320; }, "head_dim 320");
  refused([](attnrt_attention_desc& d) { d.head_dim = d.head_dim_v = 20; }, "multiples of 8");
  refused([](attnrt_attention_desc& d) { d.head_dim = d.head_dim_v = 20; }, "cuDNN 9.");
  refused([](attnrt_attention_desc& d) { d.dropout_p = 0.1f; }, "dropout");
  // cuDNN's backward has no seqlen_q = seqlen_k = 1: refused up front by supports(), not when the
  // backward is asked for.
  refused([](attnrt_attention_desc& d) { d.seqlen_q = d.seqlen_k = 1; }, "s_q = s_kv = 1 is not supported");
  refused([](attnrt_attention_desc& d) { d.seqlen_q = d.seqlen_k = 1; }, "cuDNN 9.");
}

}  // namespace
}  // namespace attnrt
