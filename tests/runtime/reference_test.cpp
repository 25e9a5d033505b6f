// The fp64 reference itself, against values worked out by hand and (for backward) against
// finite differences of its own forward.
#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/workload.hpp>

#include <gtest/gtest.h>

#include <cmath>

namespace attnrt {
namespace {

struct Tiny {
  attnrt_attention_desc d{};
  HostTensor q, k, v, out, lse, sinks;
  Tiny(int sq, int sk, int dim) {
    d.struct_size = sizeof d;
    d.dtype = ATTNRT_DTYPE_FP32;
    d.head_dim = d.head_dim_v = dim;
    d.heads_q = d.heads_kv = 1;
    d.batch = 1;
    d.seqlen_q = sq;
    d.seqlen_k = sk;
    d.softmax_scale = 1.0f;
    d.window_left = d.window_right = -1;
    d.return_lse = 1;
    d.device = DLDevice{kDLCPU, 0};
    q = HostTensor({1, sq, 1, dim}, dl_float32());
    k = HostTensor({1, sk, 1, dim}, dl_float32());
    v = HostTensor({1, sk, 1, dim}, dl_float32());
    out = HostTensor({1, sq, 1, dim}, dl_float32());
    lse = HostTensor({1, 1, sq}, dl_float32());
    sinks = HostTensor({1}, dl_float32());
  }
  attnrt_forward_args args() {
    attnrt_forward_args a{};
    a.struct_size = sizeof a;
    a.q = q.dl();
    a.k = k.dl();
    a.v = v.dl();
    a.out = out.dl();
    a.lse = lse.dl();
    a.sinks = d.has_sinks ? sinks.dl() : nullptr;
    return a;
  }
};

TEST(Reference, TwoKeysByHand) {
  Tiny t(1, 2, 2);
  t.q.set(0, 1);  // q = [1, 0]
  t.k.set(0, 1);
  t.k.set(3, 1);                                  // k = [[1, 0], [0, 1]] -> s = [1, 0]
  for (int i = 0; i < 4; ++i) t.v.set(i, i + 1);  // v = [[1, 2], [3, 4]]
  const ReferenceForward r = reference_forward(t.d, t.args());
  const double e = std::exp(1.0), p0 = e / (e + 1), p1 = 1 / (e + 1);
  EXPECT_NEAR(r.out[0], p0 * 1 + p1 * 3, 1e-15);
  EXPECT_NEAR(r.out[1], p0 * 2 + p1 * 4, 1e-15);
  EXPECT_NEAR(r.lse[0], std::log(e + 1), 1e-15);
}

TEST(Reference, SinkJoinsOnlyTheDenominator) {
  Tiny t(1, 2, 2);
  t.q.set(0, 1);
  t.k.set(0, 1);
  t.k.set(3, 1);
  for (int i = 0; i < 4; ++i) t.v.set(i, i + 1);
  t.d.has_sinks = 1;
  t.sinks.set(0, 0.5);
  const ReferenceForward r = reference_forward(t.d, t.args());
  const double e = std::exp(1.0), z = e + 1 + std::exp(0.5);
  EXPECT_NEAR(r.out[0], (e * 1 + 1 * 3) / z, 1e-15);
  EXPECT_NEAR(r.lse[0], std::log(z), 1e-15);
}

TEST(Reference, CausalIsBottomRightAligned) {
  Tiny wide(1, 3, 1);  // one query sees all three keys
  for (int j = 0; j < 3; ++j) wide.v.set(j, j + 1);
  wide.d.causal = 1;
  EXPECT_NEAR(reference_forward(wide.d, wide.args()).out[0], 2.0, 1e-15) << "equal scores: mean of v";

  Tiny tall(3, 1, 1);  // rows 0 and 1 see nothing, row 2 sees the key
  tall.v.set(0, 7);
  tall.d.causal = 1;
  const ReferenceForward r = reference_forward(tall.d, tall.args());
  EXPECT_EQ(r.out[0], 0.0);
  EXPECT_EQ(r.out[1], 0.0);
  EXPECT_TRUE(std::isinf(r.lse[0]) && r.lse[0] < 0);
  EXPECT_NEAR(r.out[2], 7.0, 1e-15);
  EXPECT_NEAR(r.lse[2], 0.0, 1e-15);
}

TEST(Reference, SoftcapBoundsScores) {
  Tiny t(1, 2, 1);
  t.q.set(0, 10);
  t.k.set(0, 10);  // raw score 100, capped to 2 * tanh(50) ~ 2
  t.v.set(0, 1);
  t.d.softcap = 2.0f;
  const ReferenceForward r = reference_forward(t.d, t.args());
  const double s = 2.0 * std::tanh(50.0);
  EXPECT_NEAR(r.out[0], std::exp(s) / (std::exp(s) + 1.0), 1e-12);
}

// d/dx of sum(out * dout) by central differences, for every input of a case with every
// feature the reference knows on at once.
TEST(Reference, BackwardMatchesFiniteDifferences) {
  WorkloadSpec spec;
  spec.dtype = ATTNRT_DTYPE_FP32;
  spec.seqlens_q = {3, 5};
  spec.seqlens_k = {6, 4};
  spec.heads_q = 4;
  spec.heads_kv = 2;
  spec.head_dim = 3;
  spec.head_dim_v = 2;
  spec.causal = true;
  spec.window_left = 3;
  spec.softcap = 1.5f;
  spec.sinks = true;
  spec.alibi = true;
  spec.seed = 7;
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  // fp64 copies, so finite differences are not swamped by fp32 rounding.
  for (HostTensor* t : {&w.q, &w.k, &w.v, &w.dout}) *t = t->to(dl_float64());
  attnrt_forward_args a = w.forward_args();
  const ReferenceBackward g = reference_backward(w.desc, a, *w.dout.dl());
  auto loss = [&] {
    const ReferenceForward f = reference_forward(w.desc, a);
    double l = 0;
    for (size_t i = 0; i < f.out.size(); ++i) l += f.out[i] * w.dout.get(static_cast<int64_t>(i));
    return l;
  };
  const double h = 1e-6;
  auto check = [&](HostTensor& t, const std::vector<double>& grad, const char* name) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double x = t.get(i);
      t.set(i, x + h);
      const double up = loss();
      t.set(i, x - h);
      const double down = loss();
      t.set(i, x);
      EXPECT_NEAR(grad[i], (up - down) / (2 * h), 1e-6) << name << "[" << i << "]";
    }
  };
  check(w.q, g.dq, "dq");
  check(w.k, g.dk, "dk");
  check(w.v, g.dv, "dv");
  HostTensor sinks64 = w.sinks.to(dl_float64());
  a.sinks = sinks64.dl();
  check(sinks64, g.dsinks, "dsinks");
}

TEST(Reference, ErrorHelpers) {
  HostTensor t({3}, dl_float32());
  t.set(0, 1);
  t.set(1, 2);
  t.set(2, 3);
  EXPECT_DOUBLE_EQ(max_abs_error(*t.dl(), {1, 2, 3.5}), 0.5);
  t.set(1, std::nan(""));
  EXPECT_TRUE(std::isnan(max_abs_error(*t.dl(), {1, 2, 3})));
  HostTensor l({1}, dl_float32());
  l.set(0, -INFINITY);
  EXPECT_EQ(max_abs_error(*l.dl(), {-INFINITY}), 0.0) << "-inf LSE matches -inf";
}

}  // namespace
}  // namespace attnrt
