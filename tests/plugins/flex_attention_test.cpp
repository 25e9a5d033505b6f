// flex_attention on the CPU (ABI 1.3's flex block): PyTorch FlexAttention's mods compiled by the
// system C++ compiler, checked forward and backward against the fp64 reference, which applies
// the same mods written here as plain C++ (ReferenceMods), not compiled from the source text.
// The mods are the ones PyTorch's FlexAttention documentation and attention-gym show: causal,
// sliding window, prefix LM, document mask (an aux tensor), ALiBi, softcap, relative position
// bias (an aux table), and block-sparse masks. Also: the refusals, the errors that name what is
// wrong, and the disk cache.
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_kernels/flex/disk_cache.hpp>
#include <attnrt_kernels/flex/mods.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "flex_case.hpp"
#include "test_support.hpp"

namespace attnrt {
namespace {

using test::error_of;

using test::f32;
using test::Flex;
using test::i32;
using test::set_block_mask;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Compiled mods go to a folder of this test run (the plugin reads ATTNRT_CACHE_DIR when it first
// compiles).
class CacheDirEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("attnrt-flex-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ::setenv("ATTNRT_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static std::filesystem::path dir() { return dir_; }

 private:
  static inline std::filesystem::path dir_;
};
const auto* const kCacheEnv = ::testing::AddGlobalTestEnvironment(new CacheDirEnvironment);

struct Case {
  std::string name;
  WorkloadSpec spec;
  std::function<Flex(const WorkloadSpec&)> make;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

WorkloadSpec shape(int batch, int sq, int sk, int hq, int hkv, int hd) {
  return test::flex_shape(batch, sq, sk, hq, hkv, hd);
}

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"causal", shape(2, 37, 37, 4, 2, 32), [](const WorkloadSpec&) {
                 Flex f;
                 f.mask_mod = "q_idx >= kv_idx";
                 f.ref.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return i >= j; };
                 return f;
               }});
  c.push_back({"sliding_window_statements", shape(1, 45, 45, 2, 2, 32), [](const WorkloadSpec&) {
                 Flex f;
                 f.mask_mod = "const int distance = q_idx - kv_idx;\nreturn distance >= 0 && distance <= 8;";
                 f.ref.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return i >= j && i - j <= 8; };
                 return f;
               }});
  c.push_back({"prefix_lm", shape(2, 30, 30, 2, 1, 16), [](const WorkloadSpec&) {
                 Flex f;
                 f.mask_mod = "kv_idx < 10 || q_idx >= kv_idx";
                 f.ref.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return j < 10 || i >= j; };
                 return f;
               }});
  c.push_back({"document_mask_aux", shape(2, 40, 40, 4, 4, 32), [](const WorkloadSpec& s) {
                 Flex f;
                 // aux0 [batch, seqlen]: document ids, different cuts per sequence
                 HostTensor doc = i32({s.batch, s.seqlen_q});
                 for (int b = 0; b < s.batch; ++b)
                   for (int t = 0; t < s.seqlen_q; ++t)
                     doc.set(b * s.seqlen_q + t, t < 11 + 7 * b ? 0 : t < 29 ? 1 : 2);
                 f.aux.push_back(doc);
                 f.mask_mod = "aux0(b, q_idx) == aux0(b, kv_idx) && q_idx >= kv_idx";
                 f.ref.visible = [doc](int64_t b, int64_t, int64_t i, int64_t j) {
                   const int64_t n = doc.shape()[1];
                   return doc.get(b * n + i) == doc.get(b * n + j) && i >= j;
                 };
                 return f;
               }});
  c.push_back({"alibi_score_mod", shape(1, 33, 41, 4, 2, 32), [](const WorkloadSpec& s) {
                 Flex f;
                 HostTensor slopes = f32({s.heads_q});
                 for (int h = 0; h < s.heads_q; ++h) slopes.set(h, std::exp2(-8.0 * (h + 1) / s.heads_q));
                 f.aux.push_back(slopes);
                 f.score_mod = "score + aux0(h) * (kv_idx - q_idx)";
                 f.score_mod_grad = "1.0f";
                 f.ref.score = [slopes](double x, int64_t, int64_t h, int64_t i, int64_t j) {
                   return x + slopes.get(h) * double(j - i);
                 };
                 return f;
               }});
  c.push_back({"softcap_score_mod_scalar", shape(2, 29, 29, 2, 2, 64), [](const WorkloadSpec&) {
                 Flex f;
                 f.scalars = {1.5f};
                 f.score_mod = "scalar0 * tanhf(score / scalar0)";
                 f.score_mod_grad = "const float t = tanhf(score / scalar0);\nreturn 1.0f - t * t;";
                 f.ref.score = [](double x, int64_t, int64_t, int64_t, int64_t) { return 1.5 * std::tanh(x / 1.5); };
                 f.ref.grad = [](double x, int64_t, int64_t, int64_t, int64_t) {
                   const double t = std::tanh(x / 1.5);
                   return 1.0 - t * t;
                 };
                 return f;
               }});
  c.push_back({"relative_bias_table_causal", shape(1, 50, 50, 2, 1, 32), [](const WorkloadSpec& s) {
                 Flex f;
                 // aux0 [heads, 2 * seqlen - 1]: a learned-looking bias per head and distance
                 HostTensor table = f32({s.heads_q, 2 * s.seqlen_q - 1});
                 std::mt19937_64 rng(5);
                 table.fill_normal(rng, 0.5);
                 f.aux.push_back(table);
                 f.score_mod = "score + aux0(h, q_idx - kv_idx + 49)";
                 f.score_mod_grad = "1";
                 f.mask_mod = "q_idx >= kv_idx";
                 const int64_t width = table.shape()[1];
                 f.ref.score = [table, width](double x, int64_t, int64_t h, int64_t i, int64_t j) {
                   return x + table.get(h * width + (i - j + 49));
                 };
                 f.ref.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return i >= j; };
                 return f;
               }});
  c.push_back({"random_block_sparse", shape(1, 70, 90, 2, 2, 32), [](const WorkloadSpec& s) {
                 Flex f;
                 // 16 x 16 blocks: each block skipped, partial (checkerboard mask_mod), or full
                 std::mt19937 rng(11);
                 std::vector<int> state(5 * 6);
                 for (int& st : state) st = static_cast<int>(rng() % 3);
                 state[0] = 2;
                 set_block_mask(f, s.seqlen_q, s.seqlen_k, 16, 16, [state](int m, int n) { return state[m * 6 + n]; });
                 f.mask_mod = "((q_idx + kv_idx) % 3) != 0";
                 f.ref.visible = [state](int64_t, int64_t, int64_t i, int64_t j) {
                   const int st = state[(i / 16) * 6 + j / 16];
                   return st == 2 || (st == 1 && (i + j) % 3 != 0);
                 };
                 return f;
               }});
  {
    WorkloadSpec s = shape(1, 1, 1, 4, 2, 32);
    s.seqlens_q = {17, 1, 40};
    s.seqlens_k = {23, 9, 40};
    c.push_back({"varlen_per_sequence_indices", s, [](const WorkloadSpec&) {
                   Flex f;
                   f.mask_mod = "kv_idx <= q_idx + 6";  // positions within each sequence
                   f.score_mod = "score - 0.05f * b";
                   f.score_mod_grad = "1";
                   f.ref.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i + 6; };
                   f.ref.score = [](double x, int64_t b, int64_t, int64_t, int64_t) {
                     return x - 0.05 * double(float(b));
                   };
                   return f;
                 }});
  }
  {
    WorkloadSpec s = shape(2, 24, 24, 4, 1, 32);
    s.sinks = true;
    s.causal = true;  // the descriptor's mask and sinks combine with the mods
    c.push_back({"sinks_and_descriptor_causal", s, [](const WorkloadSpec&) {
                   Flex f;
                   f.mask_mod = "(kv_idx % 4) != 1";
                   f.ref.visible = [](int64_t, int64_t, int64_t, int64_t j) { return j % 4 != 1; };
                   return f;
                 }});
  }
  return c;
}

double tolerance(attnrt_dtype dtype) {
  return dtype == ATTNRT_DTYPE_FP32 ? 2e-5 : dtype == ATTNRT_DTYPE_FP16 ? 4e-3 : 3e-2;
}

class FlexCpu : public ::testing::TestWithParam<std::tuple<attnrt_dtype, Case>> {};

TEST_P(FlexCpu, ForwardAndBackwardMatchTheFp64ReferenceWithTheSameMods) {
  const auto& [dtype, c] = GetParam();
  WorkloadSpec spec = c.spec;
  spec.dtype = dtype;
  spec.seed = std::hash<std::string>{}(c.name) + dtype;
  Workload w = make_workload(spec);
  w.desc.device = DLDevice{kDLCPU, 0};
  Flex f = c.make(spec);
  f.attach(w.desc);
  auto be = test::builtin_backend("flex_attention");
  ASSERT_EQ(be->unsupported_reason(w.desc), "");
  attnrt_forward_args fa = w.forward_args();
  const ReferenceForward ref = reference_forward(w.desc, fa, &f.ref);
  w.out.fill_nan();
  w.lse.fill_nan();
  be->forward(w.desc, fa, 2);
  const double tol = tolerance(dtype);
  EXPECT_LE(max_abs_error(*w.out.dl(), ref.out), tol * std::max(1.0, max_abs(ref.out)));
  EXPECT_LE(max_abs_error(*w.lse.dl(), ref.lse), 2e-5 * std::max(1.0, max_abs(ref.lse)));

  const ReferenceBackward g = reference_backward(w.desc, fa, *w.dout.dl(), &f.ref);
  w.dq.fill_nan();
  w.dk.fill_nan();
  w.dv.fill_nan();
  if (w.desc.has_sinks) w.dsinks.fill_nan();
  be->backward(w.desc, w.backward_args(), 2);
  EXPECT_LE(max_abs_error(*w.dq.dl(), g.dq), tol * std::max(1.0, max_abs(g.dq))) << "dq";
  EXPECT_LE(max_abs_error(*w.dk.dl(), g.dk), tol * std::max(1.0, max_abs(g.dk))) << "dk";
  EXPECT_LE(max_abs_error(*w.dv.dl(), g.dv), tol * std::max(1.0, max_abs(g.dv))) << "dv";
  if (w.desc.has_sinks) {
    EXPECT_LE(max_abs_error(*w.dsinks.dl(), g.dsinks), tol * std::max(1.0, max_abs(g.dsinks))) << "dsinks";
  }
}

// The mods matter: the same call without them differs from the reference with them (so the
// comparison above cannot pass by ignoring the block).
TEST(FlexCpu, TheModsChangeTheResult) {
  Workload w = make_workload(shape(1, 20, 20, 2, 2, 16));
  w.desc.device = DLDevice{kDLCPU, 0};
  Flex f;
  f.mask_mod = "q_idx >= kv_idx";
  f.ref.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return i >= j; };
  attnrt_forward_args fa = w.forward_args();
  const ReferenceForward with_mods = reference_forward(w.desc, fa, &f.ref);
  test::builtin_backend("flex_attention")->forward(w.desc, fa, 1);
  EXPECT_GT(max_abs_error(*w.out.dl(), with_mods.out), 0.05);
  f.attach(w.desc);
  test::builtin_backend("flex_attention")->forward(w.desc, fa, 1);
  EXPECT_LE(max_abs_error(*w.out.dl(), with_mods.out), 1e-5);
}

std::vector<std::tuple<attnrt_dtype, Case>> grid() {
  std::vector<std::tuple<attnrt_dtype, Case>> g;
  for (attnrt_dtype d : {ATTNRT_DTYPE_FP32, ATTNRT_DTYPE_BF16}) {
    for (const Case& c : cases()) g.emplace_back(d, c);
  }
  return g;
}
std::string case_name(const ::testing::TestParamInfo<std::tuple<attnrt_dtype, Case>>& p) {
  return std::string(sdk::dtype_name(std::get<0>(p.param))) + "_" + std::get<1>(p.param).name;
}
INSTANTIATE_TEST_SUITE_P(Mods, FlexCpu, ::testing::ValuesIn(grid()), case_name);

Workload small() {
  Workload w = make_workload(shape(1, 12, 12, 2, 2, 16));
  w.desc.device = DLDevice{kDLCPU, 0};
  return w;
}

TEST(FlexCpuErrors, BackwardWithAScoreModNeedsItsGradient) {
  Workload w = small();
  Flex f;
  f.score_mod = "score * 2.0f";
  f.attach(w.desc);
  auto be = test::builtin_backend("flex_attention");
  be->forward(w.desc, w.forward_args(), 1);
  w.dq.fill_nan();
  const std::string e = error_of([&] { be->backward(w.desc, w.backward_args(), 1); });
  EXPECT_TRUE(contains(e, "unsupported|")) << e;
  EXPECT_TRUE(contains(e, "needs score_mod_grad")) << e;
  EXPECT_TRUE(std::isnan(w.dq.get(0))) << "nothing computed";
}

TEST(FlexCpuErrors, ACompileErrorNamesTheModAndItsLine) {
  Workload w = small();
  Flex f;
  f.mask_mod = "int x = q_idx;\nreturn x >= undefined_name;";
  f.attach(w.desc);
  const std::string why = test::builtin_backend("flex_attention")->unsupported_reason(w.desc);
  EXPECT_TRUE(contains(why, "do not compile")) << why;
  EXPECT_TRUE(contains(why, "mask_mod:2")) << why;
  EXPECT_TRUE(contains(why, "undefined_name")) << why;
  EXPECT_TRUE(contains(why, "flex_attention_test")) << "the mods' source is named: " << why;
}

TEST(FlexCpuErrors, AnAuxReadOutOfBoundsIsAnErrorNotAResult) {
  Workload w = small();
  Flex f;
  HostTensor t = f32({4});
  t.fill(1.0);
  f.aux.push_back(t);
  f.score_mod = "score + aux0(kv_idx)";  // kv_idx reaches 11
  f.attach(w.desc);
  const std::string e =
      error_of([&] { test::builtin_backend("flex_attention")->forward(w.desc, w.forward_args(), 1); });
  EXPECT_TRUE(contains(e, "invalid argument|")) << e;
  EXPECT_TRUE(contains(e, "read aux0 outside its shape")) << e;
}

TEST(FlexCpuErrors, ABlockIndexOutsideTheKeysIsNamed) {
  Workload w = small();
  Flex f;
  set_block_mask(f, 12, 12, 4, 4, [](int, int) { return 1; });
  f.kv_indices.set(1 * 3 + 2, 3);  // q block 0, third entry: block 3 of 3
  f.attach(w.desc);
  const std::string e =
      error_of([&] { test::builtin_backend("flex_attention")->forward(w.desc, w.forward_args(), 1); });
  EXPECT_TRUE(contains(e, "flex_attention.kv_indices[0, 0, 1, 2] = 3 is not a key block")) << e;
}

TEST(FlexCpuErrors, AMalformedBlockIsRefusedByTheHostNamingTheField) {
  Workload w = small();
  Flex f;
  set_block_mask(f, 12, 12, 4, 4, [](int, int) { return 2; });
  f.kv_num_blocks = i32({1, 1, 2});  // 12 rows in blocks of 4 are 3 blocks
  f.attach(w.desc);
  auto be = test::builtin_backend("flex_attention");
  const std::string e = error_of([&] { be->forward(w.desc, w.forward_args(), 1); });
  EXPECT_TRUE(contains(e, "invalid argument|")) << e;
  EXPECT_TRUE(contains(e, "flex_attention.kv_num_blocks: expected shape [1, 1, 3], got [1, 1, 2]")) << e;
  EXPECT_TRUE(contains(be->unsupported_reason(w.desc), "flex_attention.kv_num_blocks")) << "supports() says it too";
  f.kv_num_blocks = i32({1, 1, 3});
  f.kv_num_blocks.fill(0);
  f.full_kv_indices = HostTensor();  // full counts without indices
  f.attach(w.desc);
  const std::string e2 = error_of([&] { be->forward(w.desc, w.forward_args(), 1); });
  EXPECT_TRUE(contains(e2, "full_kv_num_blocks and flex_attention.full_kv_indices come together")) << e2;
}

// A full list of another head extent than kv_num_blocks' (each alone a valid broadcast shape):
// refused, since per-block states are built at kv_num_blocks' extents.
TEST(FlexCpuErrors, ListsOfAnotherBatchOrHeadExtentAreRefused) {
  Workload w = small();  // 2 heads
  Flex f;
  set_block_mask(f, 12, 12, 4, 4, [](int m, int n) { return n <= m ? 2 : 0; });
  HostTensor full_num = i32({1, 2, 3}), full_idx = i32({1, 2, 3, 3});
  for (int64_t e = 0; e < full_num.numel(); ++e) full_num.set(e, f.full_kv_num_blocks.get(e % 3));
  for (int64_t e = 0; e < full_idx.numel(); ++e) full_idx.set(e, f.full_kv_indices.get(e % 9));
  f.full_kv_num_blocks = full_num;
  f.full_kv_indices = full_idx;
  f.attach(w.desc);
  auto be = test::builtin_backend("flex_attention");
  const std::string e = error_of([&] { be->forward(w.desc, w.forward_args(), 1); });
  EXPECT_TRUE(contains(e, "invalid argument|")) << e;
  EXPECT_TRUE(contains(e,
                       "flex_attention.full_kv_num_blocks: batch and head extents [1, 2] differ from "
                       "kv_num_blocks' [1, 1]"))
      << e;
}

TEST(FlexCpuErrors, OtherPluginsRefuseTheBlockByName) {
  Workload w = small();
  Flex f;
  f.mask_mod = "true";
  f.attach(w.desc);
  for (const char* plugin : {"eager", "sdpa"}) {
    EXPECT_EQ(test::builtin_backend(plugin)->unsupported_reason(w.desc),
              "extension 'flex_attention' (type 1) is required (not flagged ATTNRT_EXTENSION_OPTIONAL) and this plugin "
              "does not implement it")
        << plugin;
  }
}

// ---------------------------------------------------------------- the disk cache

TEST(FlexCache, ProducesOnceThenHitsAndRebuildsACorruptEntry) {
  test::TempDir dir;
  kernels::flex::DiskCache cache(dir.path().string());
  std::atomic<int> produced{0};
  auto produce = [&](const std::string& path) {
    ++produced;
    std::ofstream(path) << "compiled bytes";
  };
  bool hit = true;
  const std::string path = cache.get_or_create("k1.so", produce, &hit);
  EXPECT_FALSE(hit);
  EXPECT_EQ(test::read_file(path), "compiled bytes");
  cache.get_or_create("k1.so", produce, &hit);
  EXPECT_TRUE(hit);
  EXPECT_EQ(produced.load(), 1);
  std::ofstream(path, std::ios::trunc) << "compiled byt";  // truncated by a crash or a disk fault
  cache.get_or_create("k1.so", produce, &hit);
  EXPECT_FALSE(hit) << "a corrupt entry is rebuilt";
  EXPECT_EQ(produced.load(), 2);
  EXPECT_EQ(test::read_file(path), "compiled bytes");
}

TEST(FlexCache, ConcurrentCallersProduceAnEntryOnce) {
  test::TempDir dir;
  kernels::flex::DiskCache cache(dir.path().string());
  std::atomic<int> produced{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      cache.get_or_create("same.so", [&](const std::string& path) {
        ++produced;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        std::ofstream(path) << "x";
      });
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(produced.load(), 1);
}

TEST(FlexCache, AFailedCompileLeavesNoEntry) {
  test::TempDir dir;
  kernels::flex::DiskCache cache(dir.path().string());
  EXPECT_THROW(cache.get_or_create("bad.so", [](const std::string&) { throw std::runtime_error("no"); }),
               std::runtime_error);
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename(), ".lock") << "left behind: " << e.path();
  }
}

TEST(FlexCache, CompiledModsLandInTheCacheFolder) {
  Workload w = small();
  Flex f;
  f.mask_mod = "q_idx != kv_idx + 1000";  // a unit no other test compiles
  f.attach(w.desc);
  ASSERT_EQ(test::builtin_backend("flex_attention")->unsupported_reason(w.desc), "");
  int objects = 0;
  for (const auto& e : std::filesystem::directory_iterator(CacheDirEnvironment::dir() / "flex")) {
    if (e.path().extension() == ".so") {
      ++objects;
      EXPECT_TRUE(std::filesystem::exists(e.path().string() + ".sha256"));
    }
  }
  EXPECT_GE(objects, 1);
}

// The CUDA plugin finds a call shape's modules again per call by comparing the call's flex block
// with the mods it remembered (Mods::matches, module_memo.hpp): equal exactly where from_block
// would give equal mods, so that a call with other mods, aux types, ranks or scalar count never
// takes another shape's module.
TEST(FlexMods, MatchesExactlyTheBlockTheyWereReadFrom) {
  int64_t shape1[] = {8}, shape2[] = {2, 8};
  DLTensor ints{nullptr, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, shape1, nullptr, 0};
  DLTensor floats{nullptr, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape2, nullptr, 0};
  const DLTensor* aux[] = {&ints, &floats};
  attnrt_flex_attention f{};
  f.score_mod = "score + aux1(h, kv_idx)";
  f.mask_mod = "aux0(q_idx) == aux0(kv_idx)";
  f.num_aux = 2;
  f.aux = aux;
  f.num_scalars = 1;
  const kernels::flex::Mods m = kernels::flex::Mods::from_block(f);
  EXPECT_TRUE(m.matches(&f));
  EXPECT_FALSE(m.matches(nullptr));
  EXPECT_TRUE(kernels::flex::Mods{}.matches(nullptr));
  EXPECT_FALSE(kernels::flex::Mods{}.matches(&f));
  auto differs = [&](const char* what, auto&& change) {
    attnrt_flex_attention g = f;
    const DLTensor* aux2[] = {&ints, &floats};
    DLTensor ints2 = ints, floats2 = floats;
    aux2[0] = &ints2;
    aux2[1] = &floats2;
    g.aux = aux2;
    change(g, ints2, floats2);
    EXPECT_FALSE(m.matches(&g)) << what;
    EXPECT_EQ(kernels::flex::Mods::from_block(g).identity() == m.identity(), false) << what;
  };
  differs("score_mod", [](attnrt_flex_attention& g, DLTensor&, DLTensor&) { g.score_mod = "score + aux1(h, q_idx)"; });
  differs("mask_mod gone", [](attnrt_flex_attention& g, DLTensor&, DLTensor&) { g.mask_mod = nullptr; });
  differs("score_mod_grad", [](attnrt_flex_attention& g, DLTensor&, DLTensor&) { g.score_mod_grad = "1.0f"; });
  differs("source name", [](attnrt_flex_attention& g, DLTensor&, DLTensor&) { g.source_name = "mods.yaml"; });
  differs("scalars", [](attnrt_flex_attention& g, DLTensor&, DLTensor&) { g.num_scalars = 2; });
  differs("aux count", [](attnrt_flex_attention& g, DLTensor&, DLTensor&) { g.num_aux = 1; });
  differs("aux dtype", [](attnrt_flex_attention&, DLTensor& i, DLTensor&) { i.dtype = {kDLInt, 64, 1}; });
  differs("aux rank", [](attnrt_flex_attention&, DLTensor&, DLTensor& fl) { fl.ndim = 1; });
  // Equal text at another address, and aux of other extents (the unit does not depend on them).
  attnrt_flex_attention g = f;
  const std::string score = f.score_mod;
  g.score_mod = score.c_str();
  int64_t other[] = {3, 5};
  DLTensor floats3 = floats;
  floats3.shape = other;
  const DLTensor* aux3[] = {&ints, &floats3};
  g.aux = aux3;
  EXPECT_TRUE(m.matches(&g));
  // The identity (the in-memory caches' key) tells apart texts split differently between mods.
  kernels::flex::Mods x, y;
  x.score_mod = "score\x1f";
  x.mask_mod = "true";
  y.score_mod = "score";
  y.mask_mod = "\x1ftrue";
  EXPECT_NE(x.identity(), y.identity());
}

}  // namespace
}  // namespace attnrt
