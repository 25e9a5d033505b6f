// Workloads: the real fixture becomes a varlen call; random shapes, paged layout, FLOP count.
#include <attnrt/harness/safetensors.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/error.hpp>

#include <gtest/gtest.h>

#include <set>

#include "test_support.hpp"

namespace attnrt {
namespace {

const std::filesystem::path kFixture = test::source_dir() / "tests/data/minilm_l6_qkv.safetensors";

TEST(Safetensors, ReadsTheFixture) {
  const SafetensorsFile f = load_safetensors(kFixture);
  EXPECT_EQ(f.metadata.at("model"), "sentence-transformers/all-MiniLM-L6-v2");
  EXPECT_EQ(f.tensors.at("q").shape(), (std::vector<int64_t>{6, 17, 12, 32}));
  EXPECT_EQ(f.tensors.at("attention_mask").dtype().code, kDLInt);
}

TEST(Safetensors, MalformedFilesAreErrors) {
  test::TempDir dir;
  EXPECT_THROW(load_safetensors(dir.write("short.safetensors", "abc")), Error);
  std::string bad(8, '\0');
  bad[0] = 5;
  bad += "{oops";
  EXPECT_THROW(load_safetensors(dir.write("bad.safetensors", bad)), Error);
  EXPECT_THROW(load_safetensors(dir.path() / "missing.safetensors"), Error);
}

TEST(Workload, FixtureWithPaddingMaskBecomesVarlen) {
  WorkloadSpec spec;
  spec.file = kFixture;
  spec.dtype = ATTNRT_DTYPE_BF16;
  const Workload w = make_workload(spec);
  EXPECT_TRUE(w.desc.is_varlen);
  EXPECT_EQ(w.desc.batch, 6);
  EXPECT_EQ(w.desc.heads_q, 12);
  EXPECT_EQ(w.desc.head_dim, 32);
  EXPECT_EQ(w.total_q, 12 + 8 + 17 + 15 + 9 + 15);
  EXPECT_EQ(w.q.shape(), (std::vector<int64_t>{w.total_q, 12, 32}));
  EXPECT_EQ(w.q.dtype().code, kDLBfloat);
  EXPECT_FLOAT_EQ(w.desc.softmax_scale, 1.0f / std::sqrt(32.0f)) << "from the file's metadata";
  ASSERT_TRUE(w.model_out.has_value());
  EXPECT_EQ(w.model_out->shape(), (std::vector<int64_t>{w.total_q, 12, 32}));
}

TEST(Workload, PagedKvUsesAShuffledBlockTable) {
  WorkloadSpec spec;
  spec.batch = 3;
  spec.seqlen_q = 4;
  spec.seqlen_k = 50;
  spec.paged = true;
  spec.page_size = 16;
  const Workload w = make_workload(spec);
  EXPECT_EQ(w.k.shape()[0], 12);  // 4 pages per sequence
  std::set<int32_t> pages(w.block_table.data_as<int32_t>(), w.block_table.data_as<int32_t>() + 12);
  EXPECT_EQ(pages.size(), 12u) << "every page used once";
}

TEST(Workload, PagedWithSeqlensIsChunkedPrefillOverAPagedCache) {
  // ABI 1.2: packed queries (cu_seqlens_q) over pages of seqlens_k keys, -1 past the used pages.
  WorkloadSpec spec;
  spec.paged = true;
  spec.page_size = 16;
  spec.seqlens_q = {5, 1};
  spec.seqlens_k = {40, 3};
  spec.heads_q = 2;
  spec.head_dim = 8;
  spec.causal = true;
  const Workload w = make_workload(spec);
  EXPECT_TRUE(w.desc.is_paged && w.desc.is_varlen);
  EXPECT_EQ(w.q.shape(), (std::vector<int64_t>{6, 2, 8}));
  EXPECT_EQ(w.k.shape()[0], 4);  // 3 + 1 pages
  EXPECT_EQ(w.block_table.shape(), (std::vector<int64_t>{2, 3}));
  const int32_t* t = w.block_table.data_as<int32_t>();
  EXPECT_EQ(t[4], -1);
  EXPECT_EQ(t[5], -1);
  EXPECT_EQ(std::set<int32_t>({t[0], t[1], t[2], t[3]}).size(), 4u);
  EXPECT_EQ(w.seqused_k.data_as<int32_t>()[0], 40);
  EXPECT_TRUE(w.cu_seqlens_k.empty());
  // Visible pairs from seqused_k: sequence 0 sees 36..40 keys, sequence 1 all 3.
  EXPECT_DOUBLE_EQ(w.forward_flops, 2.0 * 2 * 16 * (36 + 37 + 38 + 39 + 40 + 3));
}

TEST(Workload, ForwardFlopsCountVisiblePairs) {
  WorkloadSpec spec;
  spec.batch = 1;
  spec.seqlen_q = 8;
  spec.heads_q = 1;
  spec.head_dim = 4;
  spec.causal = true;
  EXPECT_DOUBLE_EQ(make_workload(spec).forward_flops, 2.0 * (4 + 4) * (8 * 9 / 2));
}

TEST(Workload, FillPeriodRepeatsOneRandomBlock) {
  // The bench's fast fill: the first fill_period elements drawn, then repeated byte for byte.
  WorkloadSpec spec;
  spec.dtype = ATTNRT_DTYPE_BF16;
  spec.batch = 2;
  spec.seqlen_q = 100;
  spec.heads_q = 3;
  spec.head_dim = 64;
  spec.fill_period = 1000;  // not a multiple of a row: the repeat ignores the layout
  const Workload w = make_workload(spec);
  const int64_t n = w.q.numel();
  ASSERT_EQ(n, 2 * 100 * 3 * 64);
  std::set<double> distinct;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(w.q.get(i), w.q.get(i % 1000)) << "element " << i;
    distinct.insert(w.q.get(i));
  }
  EXPECT_GT(distinct.size(), 200u);   // the block itself is random
  EXPECT_NE(w.k.get(0), w.q.get(0));  // each tensor its own block
  for (int64_t i = 0; i < w.dout.numel(); ++i) ASSERT_EQ(w.dout.get(i), w.dout.get(i % 1000));

  spec.fill_period = 0;  // default: every element drawn
  const Workload all = make_workload(spec);
  int64_t repeats = 0;
  for (int64_t i = 1000; i < n; ++i) repeats += all.q.get(i) == all.q.get(i % 1000);
  EXPECT_LT(repeats, n / 10);
}

TEST(Workload, ReadsAndChecksTheConfigSection) {
  const Config c =
      Config::from_string("workload:\n  dtype: bf16\n  window: [4, 0]\n  seqlen_k: 64\n  bacward: false\n", "w.yaml");
  std::vector<std::string> warnings;
  const WorkloadSpec s = read_workload(c, "/nonexistent", &warnings);
  EXPECT_EQ(s.dtype, ATTNRT_DTYPE_BF16);
  EXPECT_EQ(s.window_left, 4);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("w.yaml:5:3"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("did you mean 'backward'"), std::string::npos) << warnings[0];
  EXPECT_THROW(read_workload(Config::from_string("workload:\n  dtype: fp8\n", "w.yaml"), "/", nullptr), Error);
  EXPECT_THROW(read_workload(Config::from_string("workload:\n  file: nope.safetensors\n", "w.yaml"), "/", nullptr),
               Error);
}

}  // namespace
}  // namespace attnrt
