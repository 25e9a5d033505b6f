// create_block_mask on the CPU (ABI 1.4, plugin_abi.h attnrt_block_mask_args), through the
// runtime's Backend: the lists the flex_attention plugin builds from a compiled mask_mod against
// a classification of every pair by the same rule written as C++ (test::Flex's ref.visible);
// a mask it builds drives a forward to the fp64 reference; and what it refuses, by name.
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>

#include <gtest/gtest.h>

#include "flex_case.hpp"
#include "test_support.hpp"

namespace attnrt {
namespace {

using test::error_of;

using test::Flex;
using test::i32;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Compiled mods go to the test run's cache folder (flex_attention_test.cpp's environment, one
// per binary).

// The eight outputs of one create_block_mask call, filled with -7 so that nothing unwritten
// passes.
struct Mask {
  int64_t bm, hm, mq, mk;
  HostTensor num[4], idx[4];  // kv, full_kv, q, full_q
  Mask(int64_t bm_, int64_t hm_, int64_t mq_, int64_t mk_) : bm(bm_), hm(hm_), mq(mq_), mk(mk_) {
    for (int p = 0; p < 4; ++p) {
      const int64_t rows = p < 2 ? mq : mk, cols = p < 2 ? mk : mq;
      num[p] = i32({bm, hm, rows});
      idx[p] = i32({bm, hm, rows, cols});
      num[p].fill(-7);
      idx[p].fill(-7);
    }
  }
  attnrt_block_mask_args args(bool full, bool transposed) {
    attnrt_block_mask_args a{};
    a.struct_size = sizeof a;
    a.kv_num_blocks = num[0].dl();
    a.kv_indices = idx[0].dl();
    if (full) {
      a.full_kv_num_blocks = num[1].dl();
      a.full_kv_indices = idx[1].dl();
    }
    if (transposed) {
      a.q_num_blocks = num[2].dl();
      a.q_indices = idx[2].dl();
      if (full) {
        a.full_q_num_blocks = num[3].dl();
        a.full_q_indices = idx[3].dl();
      }
    }
    return a;
  }
};

// Every pair of every block by the rule, then each list in ascending order with zeros after it.
void expect_matches(Mask& m, const ReferenceMods& ref, int64_t sq, int64_t sk, int64_t qb, int64_t kb, bool full,
                    bool transposed) {
  std::vector<int> state;
  for (int64_t b = 0; b < m.bm; ++b) {
    for (int64_t h = 0; h < m.hm; ++h) {
      for (int64_t r = 0; r < m.mq; ++r) {
        for (int64_t c = 0; c < m.mk; ++c) {
          bool seen = false, hidden = false;
          for (int64_t i = r * qb; i < std::min(sq, (r + 1) * qb); ++i) {
            for (int64_t j = c * kb; j < std::min(sk, (c + 1) * kb); ++j) {
              (!ref.visible || ref.visible(b, h, i, j) ? seen : hidden) = true;
            }
          }
          state.push_back(!seen ? 0 : hidden ? 1 : 2);
        }
      }
    }
  }
  for (int p = 0; p < 4; ++p) {
    const bool transpose = p >= 2, is_full = p % 2 == 1;
    if ((transpose && !transposed) || (is_full && !full)) {
      EXPECT_EQ(m.num[p].get(0), -7) << "pair " << p << " was not asked for";
      continue;
    }
    const int64_t rows = transpose ? m.mk : m.mq, cols = transpose ? m.mq : m.mk;
    for (int64_t bh = 0; bh < m.bm * m.hm; ++bh) {
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<int64_t> want;
        for (int64_t c = 0; c < cols; ++c) {
          const int st = state[size_t((bh * m.mq + (transpose ? c : r)) * m.mk + (transpose ? r : c))];
          if (is_full ? st == 2 : (st == 1 || (st == 2 && !full))) want.push_back(c);
        }
        ASSERT_EQ(int64_t(m.num[p].get(bh * rows + r)), int64_t(want.size()))
            << "pair " << p << " bh " << bh << " row " << r;
        for (int64_t c = 0; c < cols; ++c) {
          ASSERT_EQ(int64_t(m.idx[p].get((bh * rows + r) * cols + c)), c < int64_t(want.size()) ? want[size_t(c)] : 0)
              << "pair " << p << " bh " << bh << " row " << r << " entry " << c;
        }
      }
    }
  }
}

struct MaskCase {
  std::string name;
  std::function<void(Flex&)> make;
};
void PrintTo(const MaskCase& c, std::ostream* os) { *os << c.name; }

std::vector<MaskCase> mask_cases() {
  std::vector<MaskCase> c;
  c.push_back({"causal", [](Flex& f) {
                 f.mask_mod = "q_idx >= kv_idx";
                 f.ref.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return i >= j; };
               }});
  c.push_back({"sliding_window_per_head", [](Flex& f) {
                 f.mask_mod = "return kv_idx <= q_idx && q_idx - kv_idx < 5 + 7 * h;";
                 f.ref.visible = [](int64_t, int64_t h, int64_t i, int64_t j) { return j <= i && i - j < 5 + 7 * h; };
               }});
  c.push_back({"document_aux_per_sequence", [](Flex& f) {
                 HostTensor doc = i32({2, 61});  // [batch, keys]: document ids, a different cut per sequence
                 for (int b = 0; b < 2; ++b) {
                   for (int j = 0; j < 61; ++j) doc.set(b * 61 + j, j / (11 + 6 * b));
                 }
                 f.aux.push_back(doc);
                 f.mask_mod = "aux0(b, q_idx) == aux0(b, kv_idx)";
                 f.ref.visible = [](int64_t b, int64_t, int64_t i, int64_t j) {
                   return i / (11 + 6 * b) == j / (11 + 6 * b);
                 };
               }});
  c.push_back({"prefix_lm_scalar", [](Flex& f) {
                 f.scalars = {13.0f};
                 f.mask_mod = "kv_idx < (int)scalar0 || q_idx >= kv_idx";
                 f.ref.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return j < 13 || i >= j; };
               }});
  c.push_back({"nothing_visible", [](Flex& f) {
                 f.mask_mod = "false";
                 f.ref.visible = [](int64_t, int64_t, int64_t, int64_t) { return false; };
               }});
  c.push_back({"no_mask_mod", [](Flex&) {}});
  return c;
}

struct Geometry {
  int64_t sq, sk, qb, kb;
};

class CreateBlockMaskCpu : public ::testing::TestWithParam<MaskCase> {};

TEST_P(CreateBlockMaskCpu, ListsMatchEveryPairPerHeadAndBroadcast) {
  auto be = test::builtin_backend("flex_attention");
  const attnrt_exec exec{sizeof(attnrt_exec), nullptr, nullptr, 0, 2};
  // Odd lengths, blocks that do not divide them, a block larger than the sequence.
  for (const Geometry g :
       {Geometry{61, 61, 8, 16}, Geometry{23, 61, 16, 8}, Geometry{61, 17, 4, 32}, Geometry{5, 9, 128, 128}}) {
    Workload w = make_workload(test::flex_shape(2, int(g.sq), int(g.sk), 3, 1, 16));
    w.desc.device = DLDevice{kDLCPU, 0};
    Flex f;
    GetParam().make(f);
    f.attach(w.desc);
    f.block.q_block_size = int32_t(g.qb);
    f.block.kv_block_size = int32_t(g.kb);
    const int64_t mq = (g.sq + g.qb - 1) / g.qb, mk = (g.sk + g.kb - 1) / g.kb;
    for (const auto& [bm, hm] :
         {std::pair{int64_t(2), int64_t(3)}, std::pair{int64_t(1), int64_t(1)}, std::pair{int64_t(2), int64_t(1)}}) {
      for (const auto& [full, transposed] : {std::pair{true, true}, std::pair{false, true}, std::pair{true, false}}) {
        SCOPED_TRACE(::testing::Message() << "S " << g.sq << "x" << g.sk << " blocks " << g.qb << "x" << g.kb << " ["
                                          << bm << ", " << hm << "] full " << full << " q " << transposed);
        Mask m(bm, hm, mq, mk);
        be->create_block_mask(w.desc, m.args(full, transposed), exec);
        expect_matches(m, f.ref, g.sq, g.sk, g.qb, g.kb, full, transposed);
      }
    }
  }
}
INSTANTIATE_TEST_SUITE_P(Mods, CreateBlockMaskCpu, ::testing::ValuesIn(mask_cases()),
                         [](const ::testing::TestParamInfo<MaskCase>& p) { return p.param.name; });

// The built mask in a forward: the result is the reference's with mask_mod on every pair (the
// mask skips only empty blocks and trusts only full ones), and it really skips (blocks listed
// nowhere are not computed: a wrong mask would show).
TEST(CreateBlockMaskCpu, TheBuiltMaskDrivesAForwardToTheReference) {
  auto be = test::builtin_backend("flex_attention");
  Workload w = make_workload(test::flex_shape(2, 45, 70, 4, 2, 16));
  w.desc.device = DLDevice{kDLCPU, 0};
  Flex f;
  f.mask_mod = "kv_idx <= q_idx + 25 && q_idx + 25 - kv_idx < 20 + 4 * h";
  f.ref.visible = [](int64_t, int64_t h, int64_t i, int64_t j) { return j <= i + 25 && i + 25 - j < 20 + 4 * h; };
  f.attach(w.desc);
  f.block.q_block_size = 8;
  f.block.kv_block_size = 8;
  Mask m(1, 4, 6, 9);
  be->create_block_mask(w.desc, m.args(true, false), attnrt_exec{sizeof(attnrt_exec), nullptr, nullptr, 0, 2});
  f.kv_num_blocks = m.num[0];
  f.kv_indices = m.idx[0];
  f.full_kv_num_blocks = m.num[1];
  f.full_kv_indices = m.idx[1];
  f.q_block = f.kv_block = 8;
  f.attach(w.desc);
  attnrt_forward_args fa = w.forward_args();
  const ReferenceForward ref = reference_forward(w.desc, fa, &f.ref);
  w.out.fill_nan();
  be->forward(w.desc, fa, 2);
  EXPECT_LE(max_abs_error(*w.out.dl(), ref.out), 2e-5 * std::max(1.0, max_abs(ref.out)));
  int64_t listed = 0;
  for (int64_t r = 0; r < 4 * 6; ++r) listed += int64_t(m.num[0].get(r) + m.num[1].get(r));
  EXPECT_LT(listed, 4 * 6 * 9) << "some blocks are skipped, so the forward's match says they were right to be";
}

TEST(CreateBlockMaskCpuErrors, WhatIsWrongIsNamedAndNothingIsWritten) {
  auto be = test::builtin_backend("flex_attention");
  Workload w = make_workload(test::flex_shape(2, 20, 20, 2, 2, 16));
  w.desc.device = DLDevice{kDLCPU, 0};
  const attnrt_exec exec{sizeof(attnrt_exec), nullptr, nullptr, 0, 1};
  Mask m(2, 2, 3, 3);
  attnrt_block_mask_args a = m.args(true, true);
  EXPECT_TRUE(contains(error_of([&] { be->create_block_mask(w.desc, a, exec); }),
                       "invalid argument|flex_attention: create_block_mask: the descriptor carries no flex_attention "
                       "block"));
  Flex f;
  f.mask_mod = "q_idx >= kv_idx";
  f.attach(w.desc);
  f.block.q_block_size = f.block.kv_block_size = 8;
  HostTensor wrong = i32({2, 2, 4, 3});
  a.kv_indices = wrong.dl();
  const std::string shape = error_of([&] { be->create_block_mask(w.desc, a, exec); });
  EXPECT_TRUE(contains(shape, "invalid argument|")) << shape;
  EXPECT_TRUE(contains(shape, "kv_indices: expected shape [2, 2, 3, 3], got [2, 2, 4, 3]")) << shape;
  a = m.args(true, true);
  HostTensor one_head = i32({2, 1, 3});
  a.full_kv_num_blocks = one_head.dl();
  const std::string mixed = error_of([&] { be->create_block_mask(w.desc, a, exec); });
  EXPECT_TRUE(contains(mixed, "full_kv_num_blocks: expected shape [2, 2, 3], got [2, 1, 3]")) << mixed;
  a = m.args(true, true);
  a.q_indices = nullptr;
  EXPECT_TRUE(
      contains(error_of([&] { be->create_block_mask(w.desc, a, exec); }), "q_num_blocks and q_indices come together"));
  a = m.args(true, true);
  f.block.kv_num_blocks = m.num[0].dl();
  f.block.kv_indices = m.idx[0].dl();
  EXPECT_TRUE(contains(error_of([&] { be->create_block_mask(w.desc, a, exec); }),
                       "the flex_attention block's block-mask tensors must be NULL"));
  f.block.kv_num_blocks = f.block.kv_indices = nullptr;
  f.block.mask_mod = "return q_idx >= undefined_name;";
  const std::string compile = error_of([&] { be->create_block_mask(w.desc, a, exec); });
  EXPECT_TRUE(contains(compile, "undefined_name")) << compile;
  EXPECT_EQ(m.num[0].get(0), -7) << "nothing written by a refused call";
}

}  // namespace
}  // namespace attnrt
