// Paged KV semantics on the CPU plugins (eager, sdpa), which CI runs without a GPU: each paged
// call against the fp64 reference computed on a non-paged (contiguous) copy of the same data
// (paged_case.hpp): page sizes 1, 16, 64, 256; shuffled page assignment; -1 padding in the block
// table and NaN in every slot no sequence uses; GQA ratios 1 to 16; decode, multi-token decode
// and chunked prefill (padded and ABI 1.2's varlen queries); sliding window, softcap, sinks,
// LSE; split-KV's LSE merge of two partial calls equal to the unsplit call; the KV-cache append
// (ABI 1.2) through a slot mapping with padding slots; bad input named.
#include <attnrt/harness/reference.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>

#include <gtest/gtest.h>

#include "paged_case.hpp"
#include "test_support.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace attnrt {
namespace {

using test::make_paged_case;
using test::PagedCase;
using test::PagedSpec;

struct Named {
  std::string name;
  PagedSpec spec;
};
void PrintTo(const Named& n, std::ostream* os) { *os << n.name; }

// The paged call's out and lse against the reference on the dense twin.
void expect_matches_reference(Backend& backend, PagedCase& c, double tol) {
  const ReferenceForward ref = reference_forward(c.dense.desc, c.dense.forward_args());
  c.paged.out.fill_nan();
  c.paged.lse.fill_nan();
  backend.forward(c.paged.desc, c.paged.forward_args(), 2);
  EXPECT_LE(test::max_error(test::values(c.paged.out), ref.out), tol) << backend.name() << " out";
  EXPECT_LE(test::max_error(test::lse_as_varlen(c), ref.lse), tol) << backend.name() << " lse";
}

std::vector<Named> cases() {
  std::vector<Named> v;
  auto add = [&](std::string name, PagedSpec s) { v.push_back({std::move(name), s}); };
  for (int ps : {1, 16, 64, 256}) {
    PagedSpec s;
    s.q_lens = {1, 1, 1};
    s.k_lens = {1, 300, 77};
    s.page_size = ps;
    s.seed = uint64_t(ps);
    add("decode_page" + std::to_string(ps), s);
  }
  for (int group : {1, 2, 4, 8, 16}) {
    PagedSpec s;
    s.q_lens = {4, 4};
    s.k_lens = {40, 129};
    s.heads_kv = 2;
    s.heads_q = 2 * group;
    s.seed = uint64_t(100 + group);
    add("multi_token_gqa" + std::to_string(group), s);
  }
  {
    PagedSpec s;
    s.q_lens = {16, 16};
    s.k_lens = {16, 200};  // a first chunk (no prefix) and a later one
    add("padded_chunked_prefill", s);
  }
  {
    PagedSpec s;
    s.q_lens = {7, 1, 33, 5};
    s.k_lens = {7, 90, 161, 5};
    s.varlen_q = true;
    add("varlen_chunked_prefill", s);
  }
  {
    PagedSpec s;
    s.q_lens = {3, 3};
    s.k_lens = {0, 50};  // an empty cache: out 0, lse -inf
    add("empty_sequence", s);
  }
  {
    PagedSpec s;
    s.q_lens = {2, 2};
    s.k_lens = {100, 180};
    s.window_left = 31;
    add("sliding_window", s);
  }
  {
    PagedSpec s;
    s.q_lens = {1, 1};
    s.k_lens = {65, 130};
    s.softcap = 30.0f;
    add("softcap", s);
  }
  {
    PagedSpec s;
    s.q_lens = {4, 4};
    s.k_lens = {0, 96};
    s.sinks = true;
    s.window_left = 40;
    s.heads_q = 8;
    add("sinks_window", s);
  }
  {
    PagedSpec s;
    s.q_lens = {5, 5};
    s.k_lens = {20, 60};
    s.causal = false;
    add("non_causal", s);
  }
  return v;
}

class PagedCpu : public ::testing::TestWithParam<Named> {};

TEST_P(PagedCpu, MatchesReferenceOnContiguousCopy) {
  for (const char* plugin : {"eager", "sdpa"}) {
    const auto backend = test::builtin_backend(plugin);
    PagedCase c = make_paged_case(GetParam().spec);
    ASSERT_EQ(backend->unsupported_reason(c.paged.desc), "") << plugin;
    expect_matches_reference(*backend, c, 2e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, PagedCpu, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Named>& i) { return i.param.name; });

// Split-KV (FlashDecoding): attention over keys [0, a) and [a, k_len) as two paged calls (the
// second through the block table's later pages), merged by their LSE, equals the unsplit call.
// The merge is the one the CUDA combine kernel does: lse = log(sum exp(lse_s)),
// out = sum exp(lse_s - lse) out_s.
TEST(PagedSplit, LseMergeOfTwoSplitsEqualsUnsplit) {
  const auto backend = test::builtin_backend("sdpa");
  PagedSpec s;
  s.q_lens = {1, 1};
  s.k_lens = {96, 160};
  s.page_size = 16;
  s.heads_q = 8;
  s.heads_kv = 2;
  s.causal = false;
  PagedCase c = make_paged_case(s);
  backend->forward(c.paged.desc, c.paged.forward_args(), 1);
  const std::vector<double> full_out = test::values(c.paged.out), full_lse = test::values(c.paged.lse);

  const int32_t split_pages = 3;  // keys [0, 48) and [48, k_len)
  std::vector<std::vector<double>> outs, lses;
  for (int part = 0; part < 2; ++part) {
    PagedCase pc = c;
    auto* used = pc.paged.seqused_k.data_as<int32_t>();
    auto* table = pc.paged.block_table.data_as<int32_t>();
    for (int32_t b = 0; b < 2; ++b) {
      if (part == 0) {
        used[b] = split_pages * s.page_size;
      } else {
        used[b] = s.k_lens[b] - split_pages * s.page_size;
        for (int32_t p = 0; p < c.max_pages; ++p) {
          table[b * c.max_pages + p] =
              p + split_pages < c.max_pages ? c.pages_of[b * c.max_pages + p + split_pages] : -1;
        }
      }
    }
    backend->forward(pc.paged.desc, pc.paged.forward_args(), 1);
    outs.push_back(test::values(pc.paged.out));
    lses.push_back(test::values(pc.paged.lse));
  }
  const int64_t rows = static_cast<int64_t>(full_lse.size()), hd = s.head_dim;
  std::vector<double> merged_out(full_out.size()), merged_lse(full_lse.size());
  for (int64_t r = 0; r < rows; ++r) {
    // lse [batch, heads, 1] and out [batch, 1, heads, hd] share the (b, h) order at seqlen_q 1.
    const double m = std::max(lses[0][r], lses[1][r]);
    const double w0 = std::exp(lses[0][r] - m), w1 = std::exp(lses[1][r] - m);
    merged_lse[r] = m + std::log(w0 + w1);
    for (int64_t d = 0; d < hd; ++d) {
      merged_out[r * hd + d] = (w0 * outs[0][r * hd + d] + w1 * outs[1][r * hd + d]) / (w0 + w1);
    }
  }
  EXPECT_LE(test::max_error(merged_out, full_out), 1e-5);
  EXPECT_LE(test::max_error(merged_lse, full_lse), 1e-5);
}

// ABI 1.2's append_kv: tokens written through a shuffled slot mapping (with -1 padding slots
// skipped) land where the block table says, and attention over the filled cache matches the
// reference on the contiguous data.
TEST(PagedAppend, SlotMappingFillsTheCacheAttentionReads) {
  PagedSpec s;
  s.q_lens = {1, 1, 1};
  s.k_lens = {17, 64, 5};
  s.page_size = 16;
  PagedCase c = make_paged_case(s);
  for (const char* plugin : {"eager", "sdpa"}) {
    const auto backend = test::builtin_backend(plugin);
    ASSERT_TRUE(backend->has_append_kv()) << plugin;
    PagedCase filled = c;
    filled.paged.k.fill_nan();
    filled.paged.v.fill_nan();
    // New tokens: every (sequence, position) in shuffled order, with padding tokens between.
    std::vector<std::pair<int32_t, int32_t>> tokens;
    for (int32_t b = 0; b < 3; ++b)
      for (int32_t t = 0; t < s.k_lens[b]; ++t) tokens.emplace_back(b, t);
    std::mt19937_64 rng(5);
    std::shuffle(tokens.begin(), tokens.end(), rng);
    const int64_t n = static_cast<int64_t>(tokens.size()) + 2;
    const DLDataType f32{kDLFloat, 32, 1};
    HostTensor k_new({n, s.heads_kv, s.head_dim}, f32), v_new({n, s.heads_kv, s.head_dim}, f32);
    std::vector<int64_t> slots(size_t(n), -1);
    const int64_t row = int64_t(s.heads_kv) * s.head_dim;
    k_new.fill_nan();  // padding tokens hold NaN: skipped, never written
    v_new.fill_nan();
    for (size_t i = 0; i < tokens.size(); ++i) {
      const auto [b, t] = tokens[i];
      const int64_t page = c.pages_of[size_t(b) * c.max_pages + t / s.page_size];
      slots[i + 1] = page * s.page_size + t % s.page_size;  // index 0 and n-1 stay -1 (padding)
      for (int64_t e = 0; e < row; ++e) {
        k_new.set(int64_t(i + 1) * row + e, c.paged.k.get(slots[i + 1] * row + e));
        v_new.set(int64_t(i + 1) * row + e, c.paged.v.get(slots[i + 1] * row + e));
      }
    }
    int64_t slot_shape[1] = {n};
    DLTensor slot_mapping{slots.data(), DLDevice{kDLCPU, 0}, 1, DLDataType{kDLInt, 64, 1}, slot_shape, nullptr, 0};
    attnrt_append_kv_args a{sizeof a, k_new.dl(), v_new.dl(), &slot_mapping, filled.paged.k.dl(), filled.paged.v.dl()};
    const attnrt_exec exec{sizeof exec, nullptr, nullptr, 0, 1};
    backend->append_kv(filled.paged.desc, a, exec);
    // Every used slot equals the original; every other one is still NaN.
    for (int64_t e = 0; e < c.paged.k.numel(); ++e) {
      const double want = c.paged.k.get(e), got = filled.paged.k.get(e);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << plugin << " wrote an unused slot at " << e;
      } else {
        ASSERT_EQ(got, want) << plugin << " element " << e;
        ASSERT_EQ(filled.paged.v.get(e), c.paged.v.get(e)) << plugin << " v element " << e;
      }
    }
    expect_matches_reference(*backend, filled, 2e-5);

    // A slot outside the cache is named.
    slots[1] = int64_t(c.paged.k.shape()[0]) * s.page_size;
    try {
      backend->append_kv(filled.paged.desc, a, exec);
      ADD_FAILURE() << "an out-of-range slot was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("slot_mapping[1]"), std::string::npos) << e.what();
    }
  }
}

// Refusals that name the problem.
TEST(PagedBadInput, BlockTableAndSequsedKAreChecked) {
  const auto backend = test::builtin_backend("sdpa");
  PagedSpec s;
  s.q_lens = {1, 1};
  s.k_lens = {20, 40};
  PagedCase c = make_paged_case(s);
  c.paged.block_table.data_as<int32_t>()[0] = -1;  // a used page missing
  try {
    backend->forward(c.paged.desc, c.paged.forward_args(), 1);
    ADD_FAILURE() << "a -1 in a used page was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block_table[0, 0] = -1"), std::string::npos) << e.what();
  }
  PagedCase d = make_paged_case(s);
  d.paged.seqused_k.data_as<int32_t>()[1] = 41;  // more than seqlen_k (the descriptor's max)
  try {
    backend->forward(d.paged.desc, d.paged.forward_args(), 1);
    ADD_FAILURE() << "seqused_k > seqlen_k was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("seqused_k[1] = 41"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attnrt
