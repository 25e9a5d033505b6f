// sdpa's online softmax step (plugins/sdpa/online_softmax.hpp): the AVX2 and AVX-512 builds
// against a double-precision reference of FlashAttention-2's update (Dao 2023, Algorithm 1,
// lines 8-10), over two tiles so the rescaling of l and O is exercised, with masked (-inf)
// columns and a row that sees nothing in the first tile.
#include "online_softmax.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace attnrt::plugins::sdpa {
namespace {

constexpr int64_t kRows = 5, kLd = 48, kWidth = 32, kPWidth = 48, kO = 16;
constexpr float kScale = 0.37f;
const float kNegInf = -std::numeric_limits<float>::infinity();

float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

struct State {
  std::vector<float> m = std::vector<float>(kRows, -std::numeric_limits<float>::infinity());
  std::vector<float> l = std::vector<float>(kRows, 0.0f);
  std::vector<float> o = std::vector<float>(kRows * kO, 1.0f);
};

std::vector<float> tile_scores(uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<float> s(kRows * kLd, 123.0f);  // columns past kWidth must be ignored
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t j = 0; j < kWidth; ++j) s[r * kLd + j] = (j % 7 == 3) ? kNegInf : normal(gen);
  }
  return s;
}

void check_against_reference(OnlineSoftmaxFn fn, bool bf16) {
  State st;
  std::vector<double> m_ref(kRows, -INFINITY), l_ref(kRows, 0.0), o_scale(kRows, 1.0);
  for (uint32_t step = 0; step < 2; ++step) {
    std::vector<float> s = tile_scores(7 + step);
    if (step == 0) {
      for (int64_t j = 0; j < kWidth; ++j) s[4 * kLd + j] = kNegInf;  // row 4 sees nothing yet
    }
    const std::vector<float> raw = s;
    std::vector<uint16_t> p(kRows * kPWidth, 0xffff);
    fn({.s = s.data(),
        .ld_s = kLd,
        .rows = kRows,
        .width = kWidth,
        .scale = kScale,
        .m = st.m.data(),
        .l = st.l.data(),
        .o = st.o.data(),
        .ld_o = kO,
        .o_width = kO,
        .p_bf16 = bf16 ? p.data() : nullptr,
        .ld_p = kPWidth,
        .p_width = kPWidth});
    for (int64_t r = 0; r < kRows; ++r) {
      double mx = m_ref[r];
      for (int64_t j = 0; j < kWidth; ++j) mx = std::max(mx, double(kScale) * raw[r * kLd + j]);
      const double alpha = std::isinf(mx) ? 1.0 : std::exp(m_ref[r] - mx);
      double sum = 0.0;
      for (int64_t j = 0; j < kWidth; ++j) {
        const double want = std::isinf(mx) ? 0.0 : std::exp(double(kScale) * raw[r * kLd + j] - mx);
        sum += want;
        const double got = bf16 ? from_bf16(p[r * kPWidth + j]) : s[r * kLd + j];
        EXPECT_NEAR(got, want, (bf16 ? 4e-3 : 2e-6) * want + 1e-30) << "row " << r << " column " << j;
      }
      if (bf16) {
        for (int64_t j = kWidth; j < kPWidth; ++j) EXPECT_EQ(p[r * kPWidth + j], 0) << "padding column " << j;
      }
      l_ref[r] = l_ref[r] * alpha + sum;
      o_scale[r] *= alpha;
      m_ref[r] = mx;
      EXPECT_NEAR(st.l[r], l_ref[r], 1e-5 * l_ref[r]) << "l of row " << r << " after tile " << step;
      EXPECT_EQ(st.m[r], static_cast<float>(m_ref[r])) << "m of row " << r;
      for (int64_t c = 0; c < kO; ++c) EXPECT_NEAR(st.o[r * kO + c], o_scale[r], 1e-5 * o_scale[r] + 1e-30);
    }
  }
}

TEST(OnlineSoftmax, Avx2MatchesTheReference) {
  check_against_reference(&online_softmax_avx2, false);
  check_against_reference(&online_softmax_avx2, true);
}

TEST(OnlineSoftmax, Avx512MatchesTheReference) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512";
  check_against_reference(&online_softmax_avx512, false);
  check_against_reference(&online_softmax_avx512, true);
}

TEST(OnlineSoftmax, Avx512Bf16MatchesTheReference) {
  if (!cpu_has_avx512bf16()) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  check_against_reference(&online_softmax_avx512bf16, false);
  check_against_reference(&online_softmax_avx512bf16, true);
}

TEST(OnlineSoftmax, DispatchPicksTheWidestBuild) {
  EXPECT_EQ(online_softmax(), cpu_has_avx512bf16() ? &online_softmax_avx512bf16
                              : cpu_has_avx512()   ? &online_softmax_avx512
                                                   : &online_softmax_avx2);
}

}  // namespace
}  // namespace attnrt::plugins::sdpa

namespace attnrt::plugins::sdpa {
namespace {

struct Builds {
  const char* name;
  bool available;
  ProbabilitiesAndDsFn pds;
  SplitToBf16Fn split;
};

std::vector<Builds> builds() {
  return {{"avx2", true, &probabilities_and_ds_avx2, &split_to_bf16_avx2},
          {"avx512", cpu_has_avx512(), &probabilities_and_ds_avx512, &split_to_bf16_avx512},
          {"avx512bf16", cpu_has_avx512bf16(), &probabilities_and_ds_avx512bf16, &split_to_bf16_avx512bf16}};
}

// hi + lo carries about 16 significand bits: |x - (hi + lo)| <= 2^-16 |x|, and hi alone is x
// rounded to bf16 (within half an ulp, 2^-8 relative); the tail past the last whole vector takes the scalar path.
TEST(OnlineSoftmax, SplitToBf16KeepsSixteenBits) {
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.0f, 10.0f);
  std::vector<float> x(77);
  for (float& v : x) v = normal(gen);
  x[5] = 0.0f;
  for (const Builds& b : builds()) {
    if (!b.available) continue;
    std::vector<uint16_t> hi(x.size()), lo(x.size());
    b.split(x.data(), hi.data(), lo.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const double sum = double(from_bf16(hi[i])) + double(from_bf16(lo[i]));
      EXPECT_LE(std::abs(sum - x[i]), std::ldexp(std::abs(double(x[i])), -16)) << b.name << " element " << i;
      EXPECT_LE(std::abs(double(from_bf16(hi[i])) - x[i]), std::ldexp(std::abs(double(x[i])), -8)) << b.name;
    }
  }
}

// p = exp(s - lse), ds = p (dp - D) against double, masked (-inf) scores give p = ds = 0, and a
// row whose lse is -inf gets zeros throughout.
TEST(OnlineSoftmax, ProbabilitiesAndDsMatchTheReference) {
  constexpr int64_t rows = 3, ld = 32, width = 32;
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> s0(rows * ld), dp0(rows * ld);
  for (float& v : s0) v = normal(gen);
  for (float& v : dp0) v = normal(gen);
  s0[7] = kNegInf;
  const float lse[rows] = {4.0f, 5.5f, kNegInf}, D[rows] = {0.3f, -1.2f, 0.7f};
  for (const Builds& b : builds()) {
    if (!b.available) continue;
    std::vector<float> p = s0, ds = dp0;
    b.pds(p.data(), ds.data(), lse, D, rows, ld, width);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < width; ++j) {
        const size_t i = r * ld + j;
        const double want_p = std::isinf(lse[r]) ? 0.0 : std::exp(double(s0[i]) - lse[r]);
        const double want_ds = want_p * (double(dp0[i]) - D[r]);
        EXPECT_NEAR(p[i], want_p, 2e-6 * want_p + 1e-30) << b.name << " p at " << r << "," << j;
        EXPECT_NEAR(ds[i], want_ds, 2e-6 * std::abs(want_ds) + 1e-6 * want_p + 1e-30)
            << b.name << " ds at " << r << "," << j;
      }
    }
    EXPECT_EQ(p[7], 0.0f) << b.name;
    EXPECT_EQ(ds[7], 0.0f) << b.name;
  }
}

}  // namespace
}  // namespace attnrt::plugins::sdpa
