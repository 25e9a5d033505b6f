// The ring schedule (runtime/include/attnrt/runtime/parallel/ring_schedule.hpp): the split, the
// sub-block descriptors of partially visible chunk pairs (checked pair by pair against the
// global mask, with the ABI's own rule applied to the rewritten fields), the zigzag load
// balance, fusion, and the steps a sliding window cuts off.
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/parallel/ring_schedule.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

namespace attnrt {
namespace {

using cp::BlockCall;
using cp::Layout;
using cp::PairMask;
using cp::SequenceSplit;
using cp::Visibility;

attnrt_attention_desc desc_of(int32_t seqlen_q, int32_t seqlen_k, bool causal, int32_t wl = -1, int32_t wr = -1) {
  attnrt_attention_desc d{};
  d.struct_size = sizeof d;
  d.dtype = ATTNRT_DTYPE_FP32;
  d.head_dim = d.head_dim_v = 16;
  d.heads_q = d.heads_kv = 2;
  d.batch = 1;
  d.seqlen_q = seqlen_q;
  d.seqlen_k = seqlen_k;
  d.softmax_scale = 0.25f;
  d.causal = causal;
  d.window_left = wl;
  d.window_right = wr;
  d.device = {kDLCPU, 0};
  return d;
}

// The ABI's rule (plugin_abi.h) for one call: is key j visible to query i?
bool abi_visible(const attnrt_attention_desc& d, int64_t i, int64_t j) {
  const int64_t shift = int64_t{d.seqlen_k} - d.seqlen_q;
  const int64_t wr = d.causal ? 0 : d.window_right;
  if (wr >= 0 && j > i + shift + wr) return false;
  if (d.window_left >= 0 && j < i + shift - d.window_left) return false;
  return true;
}

TEST(RingSchedule, SplitsIntoEqualChunks) {
  const SequenceSplit zz(Layout::zigzag, 4, 64, 32);
  EXPECT_EQ(zz.chunk_q, 8);
  EXPECT_EQ(zz.chunk_k, 4);
  EXPECT_EQ(zz.shard_q(), 16);
  EXPECT_EQ(zz.chunks_of(0), (std::vector<int>{0, 7}));
  EXPECT_EQ(zz.chunks_of(3), (std::vector<int>{3, 4}));
  const SequenceSplit ct(Layout::contiguous, 3, 48, 48);
  EXPECT_EQ(ct.chunks_of(2), (std::vector<int>{2}));
  EXPECT_EQ(ct.shard_k(), 16);
  try {
    SequenceSplit(Layout::zigzag, 3, 50, 48);
    ADD_FAILURE() << "50 tokens accepted for 6 chunks";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("seqlen_q 50 is not a positive multiple of 6 (zigzag layout over 3 ranks"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(SequenceSplit(Layout::contiguous, 0, 8, 8), Error);
}

// Every (chunk sizes, offset, window) combination: the call's rows and keys with the rewritten
// descriptor see exactly the pairs the global mask shows, no more and no fewer, and every field
// is one a plugin accepts (windows >= -1, seqlens > 0).
TEST(RingSchedule, BlockDescriptorReproducesTheGlobalMask) {
  int partial = 0, full = 0, none = 0;
  for (int64_t cq : {1, 2, 5, 6}) {
    for (int64_t ck : {1, 3, 6}) {
      for (int64_t d = -12; d <= 12; ++d) {
        for (int32_t wl : {-1, 0, 1, 2, 4, 9}) {
          for (int32_t wr : {-1, 0, 1, 3, 7}) {
            const PairMask m{d, wl, wr};
            BlockCall call;
            const attnrt_attention_desc global = desc_of(64, 64, false, wl, wr);
            const bool any = cp::block_call(global, m, cq, ck, call);
            int64_t count = 0;
            for (int64_t i = 0; i < cq; ++i) {
              for (int64_t j = 0; j < ck; ++j) {
                const bool want = (wr < 0 || j <= i + d + wr) && (wl < 0 || j >= i + d - wl);
                count += want;
                const bool inside = any && i >= call.q_begin && i < call.q_end && j >= call.k_begin && j < call.k_end;
                const bool got = inside && abi_visible(call.desc, i - call.q_begin, j - call.k_begin);
                ASSERT_EQ(got, want) << "cq " << cq << " ck " << ck << " d " << d << " wl " << wl << " wr " << wr
                                     << " pair (" << i << ", " << j << ") call rows [" << call.q_begin << ", "
                                     << call.q_end << ") keys [" << call.k_begin << ", " << call.k_end << ") causal "
                                     << call.desc.causal << " window (" << call.desc.window_left << ", "
                                     << call.desc.window_right << ")";
              }
            }
            EXPECT_EQ(cp::visible_pairs(m, cq, ck), count);
            EXPECT_EQ(any, count > 0);
            EXPECT_EQ(cp::classify(m, cq, ck) == Visibility::none, count == 0);
            EXPECT_EQ(cp::classify(m, cq, ck) == Visibility::full, count == cq * ck);
            if (!any) {
              ++none;
              continue;
            }
            call.visibility == Visibility::full ? ++full : ++partial;
            EXPECT_GE(call.desc.window_left, -1);
            EXPECT_GE(call.desc.window_right, -1);
            EXPECT_EQ(call.desc.seqlen_q, call.q_end - call.q_begin);
            EXPECT_EQ(call.desc.seqlen_k, call.k_end - call.k_begin);
            EXPECT_GT(call.desc.seqlen_q, 0);
            EXPECT_GT(call.desc.seqlen_k, 0);
            EXPECT_EQ(call.desc.return_lse, 1);
          }
        }
      }
    }
  }
  // The sweep reaches all three kinds, many times each.
  EXPECT_GT(partial, 500);
  EXPECT_GT(full, 500);
  EXPECT_GT(none, 500);
}

// Plain causal attention over equal chunks: the diagonal blocks are causal (no window, so a
// plugin without sliding windows runs them), everything else is unmasked or skipped.
TEST(RingSchedule, CausalDiagonalIsPlainCausal) {
  const attnrt_attention_desc d = desc_of(48, 48, true);
  const SequenceSplit split(Layout::zigzag, 3, 48, 48);
  for (int r = 0; r < 3; ++r) {
    for (const auto& step : cp::make_ring_plan(d, split, r).steps) {
      for (const BlockCall& c : step.calls) {
        EXPECT_EQ(c.desc.window_left, -1);
        EXPECT_EQ(c.desc.window_right, -1);
        EXPECT_EQ(c.desc.causal, c.q_chunk == c.k_chunk ? 1 : 0);
        if (c.desc.causal) {
          EXPECT_EQ(c.desc.seqlen_q, c.desc.seqlen_k);
        }
      }
    }
  }
}

// ring-flash-attention's zigzag on two ranks, call by call. Chunks of 4: rank 0 holds {0, 3},
// rank 1 holds {1, 2}.
TEST(RingSchedule, ZigzagPlanOfTwoRanks) {
  const attnrt_attention_desc d = desc_of(16, 16, true);
  const SequenceSplit split(Layout::zigzag, 2, 16, 16);
  struct Want {
    int qc, kc;
    int64_t qb, qe, kb, ke;
    int causal;
  };
  auto check = [](const cp::RingStep& step, const std::vector<Want>& want) {
    ASSERT_EQ(step.calls.size(), want.size()) << "step " << step.step;
    for (size_t i = 0; i < want.size(); ++i) {
      const BlockCall& c = step.calls[i];
      const Want& w = want[i];
      EXPECT_EQ(std::vector<int64_t>({c.q_chunk, c.k_chunk, c.q_begin, c.q_end, c.k_begin, c.k_end, c.desc.causal}),
                std::vector<int64_t>({w.qc, w.kc, w.qb, w.qe, w.kb, w.ke, w.causal}))
          << "step " << step.step << " call " << i;
    }
  };
  const cp::RingPlan p0 = cp::make_ring_plan(d, split, 0), p1 = cp::make_ring_plan(d, split, 1);
  ASSERT_EQ(p0.num_steps, 2);
  ASSERT_EQ(p1.num_steps, 2);
  EXPECT_EQ(p0.steps[1].kv_owner, 1);
  EXPECT_EQ(p1.steps[1].kv_owner, 0);
  // Step 0, own block: q3 sees k0 fully; (0, 0) and (3, 3) are diagonal; (0, 3) is skipped.
  check(p0.steps[0], {{0, 0, 0, 4, 0, 4, 1}, {3, 0, 4, 8, 0, 4, 0}, {3, 3, 4, 8, 4, 8, 1}});
  // Step 1 on rank 0 (block {1, 2}): q3 sees both chunks fully, one call over the whole block.
  check(p0.steps[1], {{3, 1, 4, 8, 0, 8, 0}});
  // Step 1 on rank 1 (block {0, 3}): both of its chunks see k0 fully, one call over the shard.
  check(p1.steps[1], {{1, 0, 0, 8, 0, 4, 0}});
  check(p1.steps[0], {{1, 1, 0, 4, 0, 4, 1}, {2, 1, 4, 8, 0, 4, 0}, {2, 2, 4, 8, 4, 8, 1}});
}

// Megatron-LM's reason for zigzag: with causal attention every rank computes the same number of
// (query, key) pairs, at every world size; a contiguous split gives the last rank 2N-1 times
// the first rank's work (chunk r: r full blocks and a diagonal half; here more than N times).
TEST(RingSchedule, ZigzagBalancesCausalWork) {
  const attnrt_attention_desc base = desc_of(0, 0, true);
  for (int n = 1; n <= 8; ++n) {
    const int64_t seqlen = 2 * n * 6;
    attnrt_attention_desc d = base;
    d.seqlen_q = d.seqlen_k = static_cast<int32_t>(seqlen);
    const SequenceSplit zz(Layout::zigzag, n, seqlen, seqlen), ct(Layout::contiguous, n, seqlen, seqlen);
    std::set<int64_t> zigzag_work;
    int64_t total = 0;
    std::vector<int64_t> contiguous_work;
    for (int r = 0; r < n; ++r) {
      const cp::RingPlan p = cp::make_ring_plan(d, zz, r);
      zigzag_work.insert(p.visible_pairs);
      total += p.visible_pairs;
      contiguous_work.push_back(cp::make_ring_plan(d, ct, r).visible_pairs);
      // Calls per step: 3 on the own block (two diagonals, one full), 1 afterwards (fused).
      for (const auto& step : p.steps) EXPECT_EQ(step.calls.size(), step.step == 0 ? 3u : 1u);
    }
    EXPECT_EQ(zigzag_work.size(), 1u) << n << " ranks: zigzag work differs between ranks";
    EXPECT_EQ(total, seqlen * (seqlen + 1) / 2) << n << " ranks: every causal pair once";
    if (n > 1) {
      EXPECT_GT(contiguous_work.back(), n * contiguous_work.front()) << n << " ranks";
    }
  }
}

// Every pair of the sequence is computed exactly once across ranks and steps, for masks of each
// kind (so a pair skipped by mistake, or computed twice, shows here before any numerics).
TEST(RingSchedule, EveryVisiblePairOnce) {
  struct M {
    bool causal;
    int32_t wl, wr;
  };
  for (Layout layout : {Layout::zigzag, Layout::contiguous}) {
    for (M m : {M{true, -1, -1}, M{false, -1, -1}, M{true, 5, -1}, M{false, 3, 9}, M{false, -1, 2}}) {
      const int n = 3;
      const int64_t s = 36;
      const attnrt_attention_desc d = desc_of(s, s, m.causal, m.wl, m.wr);
      const SequenceSplit split(layout, n, s, s);
      std::vector<int> seen(static_cast<size_t>(s * s), 0);
      for (int r = 0; r < n; ++r) {
        const cp::RingPlan p = cp::make_ring_plan(d, split, r);
        const std::vector<int> qc = split.chunks_of(r);
        for (const auto& step : p.steps) {
          const std::vector<int> kc = split.chunks_of(step.kv_owner);
          for (const BlockCall& c : step.calls) {
            for (int64_t i = c.q_begin; i < c.q_end; ++i) {
              for (int64_t j = c.k_begin; j < c.k_end; ++j) {
                if (!abi_visible(c.desc, i - c.q_begin, j - c.k_begin)) continue;
                const int64_t gi = qc[i / split.chunk_q] * split.chunk_q + i % split.chunk_q;
                const int64_t gj = kc[j / split.chunk_k] * split.chunk_k + j % split.chunk_k;
                ++seen[gi * s + gj];
              }
            }
          }
        }
      }
      for (int64_t i = 0; i < s; ++i) {
        for (int64_t j = 0; j < s; ++j) {
          const int64_t wr = m.causal ? 0 : m.wr;
          const bool want = (wr < 0 || j <= i + wr) && (m.wl < 0 || j >= i - m.wl);
          ASSERT_EQ(seen[i * s + j], want ? 1 : 0) << cp::layout_name(layout) << " causal " << m.causal << " window ("
                                                   << m.wl << ", " << m.wr << ") pair (" << i << ", " << j << ")";
        }
      }
    }
  }
}

// A window shorter than a chunk: contiguous shards need one neighbour (2 steps), zigzag needs
// both neighbours' blocks, which come at steps 1 and N-1 (all steps run, most calls skipped).
TEST(RingSchedule, SlidingWindowCutsSteps) {
  const attnrt_attention_desc d = desc_of(48, 48, true, 5);
  EXPECT_EQ(cp::make_ring_plan(d, SequenceSplit(Layout::contiguous, 4, 48, 48), 2).num_steps, 2);
  EXPECT_EQ(cp::make_ring_plan(d, SequenceSplit(Layout::zigzag, 4, 48, 48), 2).num_steps, 4);
  // No window: every step.
  EXPECT_EQ(cp::make_ring_plan(desc_of(48, 48, true), SequenceSplit(Layout::contiguous, 4, 48, 48), 0).num_steps, 4);
  // A window of 0 (each query sees itself only): the own block is enough.
  EXPECT_EQ(cp::make_ring_plan(desc_of(48, 48, true, 0), SequenceSplit(Layout::zigzag, 4, 48, 48), 1).num_steps, 1);
}

// Varlen: one unfused call per visible (query half, key half) pair, in half indices, with the
// global varlen fields and the largest chunk as max_seqlen; causal on the diagonal pairs only.
// Every visible chunk pair of the two-rank zigzag is computed once across ranks and steps.
TEST(RingSchedule, VarlenPlanIsOneCallPerHalfPair) {
  attnrt_attention_desc d = desc_of(40, 40, true);
  d.is_varlen = 1;
  d.batch = 3;
  std::set<std::pair<int, int>> pairs;
  for (int rank = 0; rank < 2; ++rank) {
    const cp::RingPlan plan = cp::make_varlen_ring_plan(d, Layout::zigzag, 2, rank);
    ASSERT_EQ(plan.num_steps, 2);
    ASSERT_EQ(plan.steps[0].calls.size(), 3u);  // two diagonals and the full pair (2N-1-r, r)
    ASSERT_EQ(plan.steps[1].calls.size(), 2u);  // unfused: both query halves, or both key halves
    for (const cp::RingStep& step : plan.steps) {
      for (const BlockCall& c : step.calls) {
        EXPECT_EQ(c.q_end - c.q_begin, 1);
        EXPECT_EQ(c.k_end - c.k_begin, 1);
        EXPECT_EQ(c.desc.is_varlen, 1);
        EXPECT_EQ(c.desc.batch, 3);
        EXPECT_EQ(c.desc.seqlen_q, 10);  // ceil(40 / 4)
        EXPECT_EQ(c.desc.seqlen_k, 10);
        EXPECT_EQ(c.desc.causal, c.q_chunk == c.k_chunk ? 1 : 0);
        EXPECT_EQ(c.desc.window_left, -1);
        EXPECT_EQ(c.desc.return_lse, 1);
        EXPECT_GE(c.q_chunk, c.k_chunk);
        EXPECT_TRUE(pairs.insert({c.q_chunk, c.k_chunk}).second) << c.q_chunk << " " << c.k_chunk;
      }
    }
  }
  EXPECT_EQ(pairs.size(), 10u);  // the 4 x 5 / 2 pairs with k_chunk <= q_chunk
  d.window_left = 3;
  try {
    (void)cp::make_varlen_ring_plan(d, Layout::zigzag, 2, 0);
    ADD_FAILURE() << "a window with varlen planned";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ATTNRT_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("sliding windows"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attnrt
