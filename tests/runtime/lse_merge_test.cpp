// The LSE merge (runtime/include/attnrt/runtime/parallel/lse_merge.hpp) and the CPU BlockOps:
// merging the partial results of two key sets equals the result over their union, computed in
// fp64 from the same scores; rows with no visible key, NaN and large scores behave.
#include <attnrt/runtime/parallel/block_ops.hpp>
#include <attnrt/runtime/parallel/lse_merge.hpp>

#include <attnrt/harness/host_tensor.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace attnrt {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Attention of one query row over keys [begin, end) in fp64: (out, lse); empty: (0, -inf).
struct Partial {
  std::vector<double> out;
  double lse;
};
Partial attend(const std::vector<double>& s, const std::vector<std::vector<double>>& v, size_t begin, size_t end) {
  Partial p{std::vector<double>(v[0].size(), 0.0), -std::numeric_limits<double>::infinity()};
  if (begin >= end) return p;
  double m = -std::numeric_limits<double>::infinity();
  for (size_t j = begin; j < end; ++j) m = std::max(m, s[j]);
  double sum = 0;
  for (size_t j = begin; j < end; ++j) sum += std::exp(s[j] - m);
  p.lse = m + std::log(sum);
  for (size_t j = begin; j < end; ++j)
    for (size_t c = 0; c < p.out.size(); ++c) p.out[c] += std::exp(s[j] - p.lse) * v[j][c];
  return p;
}

// Merging the two halves of a row, for every cut (empty halves included) and score scales up to
// 1e4 (exp would overflow float at 89): float's merge is within a few ulps of the fp64 union.
TEST(LseMerge, TwoHalvesEqualTheWhole) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal;
  const size_t n = 12, dim = 5;
  for (double scale : {1.0, 30.0, 1e4}) {
    std::vector<double> s(n);
    std::vector<std::vector<double>> v(n, std::vector<double>(dim));
    for (size_t j = 0; j < n; ++j) {
      s[j] = scale * normal(rng);
      for (double& x : v[j]) x = normal(rng);
    }
    const Partial whole = attend(s, v, 0, n);
    for (size_t cut = 0; cut <= n; ++cut) {
      const Partial a = attend(s, v, 0, cut), b = attend(s, v, cut, n);
      std::vector<float> out(a.out.begin(), a.out.end()), part(b.out.begin(), b.out.end());
      float lse = static_cast<float>(a.lse);
      cp::lse_merge_row(out.data(), lse, part.data(), static_cast<float>(b.lse), static_cast<int>(dim));
      // |lse| up to ~4e4: float's spacing there is 4e-3; relative 1e-6 covers a few ulps.
      EXPECT_NEAR(lse, whole.lse, 1e-6 * std::max(1.0, std::fabs(whole.lse))) << "scale " << scale << " cut " << cut;
      for (size_t c = 0; c < dim; ++c) {
        EXPECT_NEAR(out[c], whole.out[c], 2e-6 * std::max(1.0, std::fabs(whole.out[c])))
            << "scale " << scale << " cut " << cut << " col " << c;
      }
    }
  }
}

TEST(LseMerge, EmptySidesAndNaN) {
  // Both sides empty: the ABI's empty row (out 0, lse -inf), even if a side's out is garbage.
  float out[2] = {NAN, 1.0f}, part[2] = {NAN, NAN}, lse = -kInf;
  cp::lse_merge_row(out, lse, part, -kInf, 2);
  EXPECT_EQ(lse, -kInf);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  // One side empty: the other unchanged, exactly.
  float a[2] = {0.25f, -3.5f}, b[2] = {NAN, 7.0f}, la = 1.75f;
  cp::lse_merge_row(a, la, b, -kInf, 2);
  EXPECT_EQ(la, 1.75f);
  EXPECT_EQ(a[0], 0.25f);
  EXPECT_EQ(a[1], -3.5f);
  float e[2] = {0.0f, 0.0f}, f[2] = {0.5f, 2.0f}, le = -kInf;
  cp::lse_merge_row(e, le, f, -0.5f, 2);
  EXPECT_EQ(le, -0.5f);
  EXPECT_EQ(e[0], 0.5f);
  EXPECT_EQ(e[1], 2.0f);
  // NaN in an LSE is never hidden.
  float g[1] = {1.0f}, h[1] = {1.0f}, lg = 0.0f;
  cp::lse_merge_row(g, lg, h, NAN, 1);
  EXPECT_TRUE(std::isnan(lg));
  EXPECT_TRUE(std::isnan(g[0]));
}

// BlockOps::merge on the ABI's layouts (out [b, l, h, d], lse [b, h, l]) through strided views of
// a row range, in bf16: each row equals lse_merge_row's, rows outside the range are untouched.
TEST(HostBlockOps, MergeAddAndCopyOnStridedViews) {
  auto ops = cp::host_block_ops();
  const int64_t b = 2, l = 5, h = 3, d = 4;
  HostTensor acc({b, l, h, d}, dl_float32()), part({b, l, h, d}, dl_dtype_of(ATTNRT_DTYPE_BF16));
  HostTensor lse_acc({b, h, l}, dl_float32()), lse_part({b, h, l}, dl_float32());
  std::mt19937_64 rng(5);
  acc.fill_normal(rng);
  part.fill_normal(rng);
  lse_acc.fill_normal(rng);
  lse_part.fill_normal(rng);
  lse_acc.set(0, -kInf);  // (b 0, h 0, l 0): the accumulator has seen nothing yet
  const HostTensor acc0 = acc, lse0 = lse_acc;
  // Rows [1, 4) of every tensor: views with the full tensors' strides and a byte offset.
  auto rows = [](HostTensor& t, int dim, int64_t begin, int64_t end, std::vector<int64_t>& shape,
                 std::vector<int64_t>& strides) {
    DLTensor v = *t.dl();
    shape.assign(v.shape, v.shape + v.ndim);
    strides.assign(v.ndim, 1);
    for (int i = v.ndim - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
    v.byte_offset = static_cast<uint64_t>(begin * strides[dim]) * (v.dtype.bits / 8);
    shape[dim] = end - begin;
    v.shape = shape.data();
    v.strides = strides.data();
    return v;
  };
  std::vector<int64_t> s1, t1, s2, t2, s3, t3, s4, t4;
  DLTensor va = rows(acc, 1, 1, 4, s1, t1), vp = rows(part, 1, 1, 4, s2, t2), vla = rows(lse_acc, 2, 1, 4, s3, t3),
           vlp = rows(lse_part, 2, 1, 4, s4, t4);
  ops->merge(va, vla, vp, vlp, nullptr);
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t li = 0; li < l; ++li) {
      for (int64_t hi = 0; hi < h; ++hi) {
        const int64_t lse_at = (bi * h + hi) * l + li;
        std::vector<float> want(d), p(d);
        for (int64_t c = 0; c < d; ++c) {
          want[c] = static_cast<float>(acc0.get(((bi * l + li) * h + hi) * d + c));
          p[c] = static_cast<float>(part.get(((bi * l + li) * h + hi) * d + c));
        }
        float want_lse = static_cast<float>(lse0.get(lse_at));
        if (li >= 1 && li < 4)
          cp::lse_merge_row(want.data(), want_lse, p.data(), static_cast<float>(lse_part.get(lse_at)), 4);
        EXPECT_EQ(static_cast<float>(lse_acc.get(lse_at)), want_lse) << bi << " " << li << " " << hi;
        for (int64_t c = 0; c < d; ++c) {
          EXPECT_EQ(static_cast<float>(acc.get(((bi * l + li) * h + hi) * d + c)), want[c])
              << bi << " " << li << " " << hi;
        }
      }
    }
  }
  // add: fp32 += bf16 on the row range; copy: fp32 -> bf16 rounds to nearest.
  const HostTensor before = acc;
  ops->add(va, vp, nullptr);
  for (int64_t i = 0; i < acc.numel(); ++i) {
    const int64_t li = (i / (h * d)) % l;
    const double want = before.get(i) + (li >= 1 && li < 4 ? part.get(i) : 0.0);
    EXPECT_EQ(acc.get(i), static_cast<double>(static_cast<float>(want))) << i;
  }
  HostTensor rounded({b, l, h, d}, dl_dtype_of(ATTNRT_DTYPE_BF16));
  ops->copy(*acc.dl(), *rounded.dl(), nullptr);
  const HostTensor expected = acc.to(dl_dtype_of(ATTNRT_DTYPE_BF16));
  for (int64_t i = 0; i < acc.numel(); ++i) EXPECT_EQ(rounded.get(i), expected.get(i)) << i;
  ops->fill(*lse_acc.dl(), -kInf, nullptr);
  for (int64_t i = 0; i < lse_acc.numel(); ++i) EXPECT_EQ(lse_acc.get(i), -std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace attnrt
