// Numerics of the CPU plugins over a grid of dtypes x features, forward and backward, against
// the fp64 reference (runtime/src/reference, independent of the plugins). The rule, as in
// FlashAttention's tests: eager's error in the call's dtype is within the dtype's tolerance,
// and sdpa's error is at most 2x eager's plus a small floor. Outputs are poisoned with NaN
// first, inputs are fresh random normals, and NaN never passes.
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/validate.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "test_support.hpp"

namespace attnrt {
namespace {

struct Case {
  std::string name;
  WorkloadSpec spec;
};

// Readable test parameters in gtest's output.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

WorkloadSpec base(int batch, int sq, int sk, int hq, int hkv, int hd, int hv = 0) {
  WorkloadSpec s;
  s.batch = batch;
  s.seqlen_q = sq;
  s.seqlen_k = sk;
  s.heads_q = hq;
  s.heads_kv = hkv;
  s.head_dim = hd;
  s.head_dim_v = hv;
  return s;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"basic", base(2, 64, 64, 4, 4, 64)});
  c.push_back({"hd32", base(2, 50, 70, 2, 2, 32)});
  c.push_back({"hd96_v64", base(1, 40, 48, 2, 2, 96, 64)});
  c.push_back({"hd128", base(1, 48, 48, 2, 2, 128)});
  c.push_back({"hd256_v128", base(1, 40, 33, 2, 1, 256, 128)});
  c.push_back({"gqa4", base(2, 40, 40, 8, 2, 64)});
  c.push_back({"mqa", base(1, 72, 72, 8, 1, 32)});
  {
    WorkloadSpec s = base(2, 40, 96, 4, 2, 64);
    s.causal = true;
    c.push_back({"causal_sq_lt_sk", s});
  }
  {
    WorkloadSpec s = base(2, 96, 40, 4, 4, 64);  // rows 0..55 see no key: zeros, LSE -inf
    s.causal = true;
    c.push_back({"causal_sq_gt_sk_masked_rows", s});
  }
  {
    WorkloadSpec s = base(2, 80, 80, 2, 2, 64);
    s.window_left = 16;
    s.window_right = 8;
    c.push_back({"window", s});
  }
  {
    WorkloadSpec s = base(1, 100, 100, 4, 2, 64);
    s.causal = true;
    s.window_left = 24;
    c.push_back({"causal_window", s});
  }
  {
    WorkloadSpec s = base(2, 64, 64, 2, 2, 64);
    s.softcap = 1.5f;  // scores ~ N(0, 1): the cap bites
    c.push_back({"softcap", s});
  }
  {
    WorkloadSpec s = base(2, 64, 64, 4, 2, 64);
    s.causal = true;
    s.sinks = true;
    c.push_back({"sinks_causal_gqa", s});
  }
  {
    WorkloadSpec s = base(2, 64, 80, 4, 4, 32);
    s.alibi = true;
    s.causal = true;
    c.push_back({"alibi_causal", s});
  }
  {
    WorkloadSpec s = base(1, 1, 1, 4, 2, 64);
    s.seqlens_q = {5, 0, 37, 64};  // an empty query sequence and an empty key sequence
    s.seqlens_k = {9, 3, 0, 64};
    c.push_back({"varlen_ragged", s});
  }
  {
    WorkloadSpec s = base(1, 1, 1, 6, 2, 64);
    s.seqlens_q = {17, 64, 1};
    s.causal = true;
    c.push_back({"varlen_causal_gqa", s});
  }
  {
    WorkloadSpec s = base(1, 1, 1, 8, 2, 64, 32);
    s.seqlens_q = {30, 7, 51};
    s.seqlens_k = {44, 7, 60};
    s.causal = true;
    s.window_left = 20;
    s.softcap = 2.0f;
    s.sinks = true;
    s.alibi = true;
    c.push_back({"everything", s});
  }
  {
    WorkloadSpec s = base(3, 8, 50, 4, 2, 64);
    s.paged = true;
    s.page_size = 16;
    s.causal = true;
    c.push_back({"paged_decode", s});
  }
  return c;
}

// eager's tolerance: max |error| <= tol * max(1, max |ref|); outputs are rounded to the dtype.
double eager_tolerance(attnrt_dtype dtype) {
  switch (dtype) {
    case ATTNRT_DTYPE_FP32: return 2e-5;
    case ATTNRT_DTYPE_FP16: return 4e-3;
    case ATTNRT_DTYPE_BF16: return 3e-2;
  }
  return 0;
}
double floor_of(attnrt_dtype dtype) {
  return dtype == ATTNRT_DTYPE_FP32 ? 2e-6 : dtype == ATTNRT_DTYPE_FP16 ? 2e-4 : 2e-3;
}

struct Errors {
  double out = 0, lse = 0, dq = 0, dk = 0, dv = 0, dsinks = 0;
};

class Numerics : public ::testing::TestWithParam<std::tuple<attnrt_dtype, Case>> {};

TEST_P(Numerics, ForwardAndBackwardMatchTheFp64Reference) {
  const auto& [dtype, c] = GetParam();
  WorkloadSpec spec = c.spec;
  spec.dtype = dtype;
  spec.seed = std::hash<std::string>{}(c.name) + dtype;  // fresh inputs per case and dtype
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  attnrt_forward_args fa = w.forward_args();
  const ReferenceForward ref = reference_forward(w.desc, fa);
  const bool backward = !w.desc.is_paged;
  const ReferenceBackward gref = backward ? reference_backward(w.desc, fa, *w.dout.dl()) : ReferenceBackward{};

  std::map<std::string, Errors> errors;
  for (const char* plugin : {"eager", "sdpa"}) {
    auto be = test::builtin_backend(plugin);
    ASSERT_EQ(be->unsupported_reason(w.desc), "") << plugin;
    w.out.fill_nan();
    w.lse.fill_nan();
    be->forward(w.desc, fa, 2);
    Errors& e = errors[plugin];
    e.out = max_abs_error(*w.out.dl(), ref.out);
    e.lse = max_abs_error(*w.lse.dl(), ref.lse);
    // Rows that see no key: exactly zero output and LSE -inf, never NaN.
    for (size_t i = 0; i < ref.lse.size(); ++i) {
      if (std::isinf(ref.lse[i])) {
        ASSERT_TRUE(std::isinf(w.lse.get(static_cast<int64_t>(i)))) << plugin << " lse[" << i << "]";
      }
    }
    if (!backward) continue;
    w.dq.fill_nan();
    w.dk.fill_nan();
    w.dv.fill_nan();
    if (w.desc.has_sinks) w.dsinks.fill_nan();
    attnrt_backward_args ba = w.backward_args();
    be->backward(w.desc, ba, 2);
    e.dq = max_abs_error(*w.dq.dl(), gref.dq);
    e.dk = max_abs_error(*w.dk.dl(), gref.dk);
    e.dv = max_abs_error(*w.dv.dl(), gref.dv);
    if (w.desc.has_sinks) e.dsinks = max_abs_error(*w.dsinks.dl(), gref.dsinks);
  }
  const double tol = eager_tolerance(dtype), fl = floor_of(dtype);
  struct Check {
    const char* what;
    double eager, sdpa, scale;
  };
  std::vector<Check> checks = {{"out", errors["eager"].out, errors["sdpa"].out, max_abs(ref.out)},
                               {"lse", errors["eager"].lse, errors["sdpa"].lse, 1.0}};
  if (backward) {
    checks.push_back({"dq", errors["eager"].dq, errors["sdpa"].dq, max_abs(gref.dq)});
    checks.push_back({"dk", errors["eager"].dk, errors["sdpa"].dk, max_abs(gref.dk)});
    checks.push_back({"dv", errors["eager"].dv, errors["sdpa"].dv, max_abs(gref.dv)});
    if (w.desc.has_sinks)
      checks.push_back({"dsinks", errors["eager"].dsinks, errors["sdpa"].dsinks, max_abs(gref.dsinks)});
  }
  for (const Check& k : checks) {
    // LSE is float32 for every dtype and computed in float32.
    const double t = (std::string(k.what) == "lse" ? 2e-5 : tol) * std::max(1.0, k.scale);
    EXPECT_LE(k.eager, t) << "eager " << k.what;  // NaN fails every comparison
    EXPECT_LE(k.sdpa, 2 * k.eager + fl * std::max(1.0, k.scale)) << "sdpa " << k.what << " (eager " << k.eager << ")";
  }
}

std::vector<std::tuple<attnrt_dtype, Case>> grid() {
  std::vector<std::tuple<attnrt_dtype, Case>> g;
  for (attnrt_dtype d : {ATTNRT_DTYPE_FP32, ATTNRT_DTYPE_FP16, ATTNRT_DTYPE_BF16}) {
    for (const Case& c : cases()) g.emplace_back(d, c);
  }
  return g;
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<attnrt_dtype, Case>>& p) {
  return std::string(sdk::dtype_name(std::get<0>(p.param))) + "_" + std::get<1>(p.param).name;
}

INSTANTIATE_TEST_SUITE_P(Grid, Numerics, ::testing::ValuesIn(grid()), case_name);

// Split-KV (sdpa_forward.cpp): a call with fewer items than threads splits each item's key tiles
// among units, and the last unit of an item merges their partial states. These shapes have
// several key tiles and one to six items (sdpa_kernels.hpp's forward_splits), so that 3, 8 or 16
// threads split them and 1 does not; each carries what the merge must keep: rows that see no key
// in some splits or in all (a window, an empty key sequence), sinks (applied after the merge),
// GQA/MQA, causal, softcap, ALiBi, varlen, a paged decode. The rule is the grid's: the error
// against the fp64 reference at most 2x eager's plus the floor.
TEST(SplitKeys, FewItemsOnManyThreadsMatchTheFp64Reference) {
  std::vector<Case> split_cases;
  {
    WorkloadSpec s = base(1, 30, 700, 4, 1, 64);  // one item
    s.causal = true;
    s.sinks = true;
    split_cases.push_back({"causal_sinks_gqa", s});
  }
  {
    WorkloadSpec s = base(1, 64, 1000, 8, 1, 64);  // four items of 16 queries x 8 heads
    s.causal = true;
    split_cases.push_back({"causal_mqa", s});
  }
  {
    WorkloadSpec s = base(1, 100, 900, 1, 1, 64);
    s.window_left = 400;
    s.window_right = 50;
    s.softcap = 1.5f;
    split_cases.push_back({"window_softcap", s});
  }
  {
    WorkloadSpec s = base(1, 1, 1, 2, 1, 64, 32);
    s.seqlens_q = {100, 9, 1};
    s.seqlens_k = {640, 0, 515};  // the second sequence's rows see no key
    s.causal = true;
    s.alibi = true;
    s.sinks = true;
    split_cases.push_back({"varlen_alibi_sinks", s});
  }
  {
    WorkloadSpec s = base(2, 1, 900, 4, 1, 64);
    s.paged = true;
    s.page_size = 16;
    s.causal = true;
    split_cases.push_back({"paged_decode", s});
  }
  for (attnrt_dtype dtype : {ATTNRT_DTYPE_FP32, ATTNRT_DTYPE_FP16, ATTNRT_DTYPE_BF16}) {
    for (const Case& c : split_cases) {
      SCOPED_TRACE(std::string(sdk::dtype_name(dtype)) + "_" + c.name);
      WorkloadSpec spec = c.spec;
      spec.dtype = dtype;
      spec.seed = std::hash<std::string>{}(c.name) + 7 * dtype;
      Workload w = make_workload(spec);
      w.desc.device = DLDevice{kDLCPU, 0};
      attnrt_forward_args fa = w.forward_args();
      const ReferenceForward ref = reference_forward(w.desc, fa);
      auto eager = test::builtin_backend("eager");
      w.out.fill_nan();
      eager->forward(w.desc, fa, 2);
      const double eager_out = max_abs_error(*w.out.dl(), ref.out);
      const double scale = std::max(1.0, max_abs(ref.out));
      ASSERT_LE(eager_out, eager_tolerance(dtype) * scale);
      auto sdpa = test::builtin_backend("sdpa");
      ASSERT_EQ(sdpa->unsupported_reason(w.desc), "");
      for (int threads : {1, 3, 8, 16}) {
        w.out.fill_nan();
        w.lse.fill_nan();
        sdpa->forward(w.desc, fa, threads);
        EXPECT_LE(max_abs_error(*w.out.dl(), ref.out), 2 * eager_out + floor_of(dtype) * scale)
            << threads << " threads";
        EXPECT_LE(max_abs_error(*w.lse.dl(), ref.lse), 2e-5) << threads << " threads";
        for (size_t i = 0; i < ref.lse.size(); ++i) {
          if (std::isinf(ref.lse[i])) {
            ASSERT_TRUE(std::isinf(w.lse.get(static_cast<int64_t>(i)))) << threads << " threads, lse[" << i << "]";
          }
        }
      }
    }
  }
}

// The backward per (sequence, kv head) (sdpa_backward.cpp; sdpa_kernels.hpp's backward_per_head)
// against the two passes: these shapes have several 128-key blocks a sequence, so that dq sums
// over key blocks, and four or six (sequence, kv head) pairs, so that 1 and 2 threads take the
// per-pair path (two pairs a thread), 3 the one or the other, and 8 the two passes. Each is held
// to the grid's rule (2x eager's error plus the floor) for dq, dk, dv and dsinks.
TEST(PerHeadBackward, MatchesTheFp64ReferenceOnBothPaths) {
  std::vector<Case> bwd_cases;
  {
    WorkloadSpec s = base(2, 300, 400, 4, 2, 64);
    s.causal = true;
    s.sinks = true;
    bwd_cases.push_back({"causal_sinks_gqa", s});
  }
  {
    WorkloadSpec s = base(2, 260, 390, 2, 2, 64);
    s.window_left = 150;
    s.window_right = 40;
    s.softcap = 1.5f;
    bwd_cases.push_back({"window_softcap", s});
  }
  {
    WorkloadSpec s = base(1, 1, 1, 6, 2, 64, 32);
    s.seqlens_q = {200, 0, 131};
    s.seqlens_k = {330, 64, 0};
    s.causal = true;
    s.alibi = true;
    bwd_cases.push_back({"varlen_alibi", s});
  }
  for (attnrt_dtype dtype : {ATTNRT_DTYPE_FP32, ATTNRT_DTYPE_BF16}) {
    for (const Case& c : bwd_cases) {
      SCOPED_TRACE(std::string(sdk::dtype_name(dtype)) + "_" + c.name);
      WorkloadSpec spec = c.spec;
      spec.dtype = dtype;
      spec.seed = std::hash<std::string>{}(c.name) + 11 * dtype;
      Workload w = make_workload(spec);
      w.desc.device = DLDevice{kDLCPU, 0};
      attnrt_forward_args fa = w.forward_args();
      auto eager = test::builtin_backend("eager");
      eager->forward(w.desc, fa, 2);  // out and LSE for both backwards
      const ReferenceBackward gref = reference_backward(w.desc, fa, *w.dout.dl());
      attnrt_backward_args ba = w.backward_args();
      eager->backward(w.desc, ba, 2);
      struct Grad {
        const char* what;
        HostTensor* got;
        const std::vector<double>* ref;
        double eager = 0;
      };
      std::vector<Grad> grads = {{"dq", &w.dq, &gref.dq}, {"dk", &w.dk, &gref.dk}, {"dv", &w.dv, &gref.dv}};
      if (w.desc.has_sinks) grads.push_back({"dsinks", &w.dsinks, &gref.dsinks});
      for (Grad& g : grads) {
        g.eager = max_abs_error(*g.got->dl(), *g.ref);
        ASSERT_LE(g.eager, eager_tolerance(dtype) * std::max(1.0, max_abs(*g.ref))) << "eager " << g.what;
      }
      auto sdpa = test::builtin_backend("sdpa");
      ASSERT_EQ(sdpa->unsupported_reason(w.desc), "");
      for (int threads : {1, 2, 3, 8}) {
        for (Grad& g : grads) g.got->fill_nan();
        sdpa->backward(w.desc, ba, threads);
        for (const Grad& g : grads) {
          const double scale = std::max(1.0, max_abs(*g.ref));
          EXPECT_LE(max_abs_error(*g.got->dl(), *g.ref), 2 * g.eager + floor_of(dtype) * scale)
              << g.what << ", " << threads << " threads";
        }
      }
    }
  }
}

// Repeats are bit-identical, whatever the thread count: the deterministic flag is honoured.
TEST(Determinism, SdpaBackwardIsBitIdenticalAcrossRepeatsAndThreadCounts) {
  WorkloadSpec spec = base(2, 130, 130, 4, 2, 64);
  spec.causal = true;
  spec.sinks = true;
  spec.dtype = ATTNRT_DTYPE_BF16;
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  w.desc.deterministic = 1;
  auto be = test::builtin_backend("sdpa");
  ASSERT_EQ(be->unsupported_reason(w.desc), "");
  attnrt_forward_args fa = w.forward_args();
  be->forward(w.desc, fa, 2);
  attnrt_backward_args ba = w.backward_args();
  std::vector<HostTensor> first;
  for (int threads : {1, 2, 2}) {
    be->backward(w.desc, ba, threads);
    std::vector<HostTensor> now = {w.dq, w.dk, w.dv, w.dsinks};
    if (first.empty()) {
      first = now;
      continue;
    }
    for (size_t i = 0; i < now.size(); ++i) {
      EXPECT_EQ(std::memcmp(now[i].data(), first[i].data(), now[i].nbytes()), 0)
          << "tensor " << i << ", threads " << threads;
    }
  }
}

TEST(Backward, PagedKvBackwardIsRefusedNotWrong) {
  WorkloadSpec spec = base(1, 4, 32, 2, 2, 32);
  spec.paged = true;
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  attnrt_backward_args ba = w.backward_args();
  for (const char* plugin : {"eager", "sdpa"}) {
    try {
      test::builtin_backend(plugin)->backward(w.desc, ba);
      FAIL() << plugin;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("backward through a paged KV cache is not supported"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace attnrt
