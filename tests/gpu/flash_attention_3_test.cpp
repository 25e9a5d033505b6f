// flash_attention_3 on the GPU (issue 13): the forward (head_dim 64, 96 padded onto the 128
// kernel, 128, 192, 256) and the backward (its own at 64 and 128, flash_attention_2's kernels at
// 96, 192 and 256), against the fp64 reference under
// FlashAttention's rule (gpu_support.hpp: at most 2x CUDA eager's error in the same dtype, plus a floor; NaN never
// passes) on a fixed grid of edge cases and on random cases drawn from every advertised feature and their combinations:
// odd lengths, GQA ratios 1/4/8/32, Sq != Sk both ways, fully masked rows, varlen batches with empty and one-token
// sequences. Skipped, with the reason, without a CUDA device or off Hopper (the plugin is sm_90a code).
#include "gpu_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace attnrt {
namespace {

using namespace gpu_test;

// "" when flash_attention_3 can run here, else why not.
std::string fa3_skip_reason() {
  Gpu& gpu = Gpu::get();
  if (!gpu.skip_reason.empty()) return gpu.skip_reason;
  if (gpu.device.cuda_arch != 90) {
    return fmt::format("flash_attention_3 is sm_90a code; this GPU is sm_{}", gpu.device.cuda_arch);
  }
  if (!gpu.registry->find("flash_attention_3", "cuda")) return "flash_attention_3 is not built (needs CUTLASS)";
  return "";
}

// The plugin's backward: its own at 64 and 128, flash_attention_2's kernels at 96, 192, 256.
bool has_backward(int head_dim) {
  return head_dim == 64 || head_dim == 96 || head_dim == 128 || head_dim == 192 || head_dim == 256;
}

// The fp64 reference's backward costs seconds per million score elements per head on the GPU
// machine's CPU: above this many (batch x heads x seqlen_q x seqlen_k), a case checks the
// forward only. The backward's walk over many key and query blocks is covered below it
// (lengths to 1000 at 8 heads).
constexpr double kBackwardCheckElements = 8.5e6;

void check(const WorkloadSpec& spec) {
  Gpu& gpu = Gpu::get();
  Workload w = gpu_workload(gpu, spec);
  Backend& fa3 = *gpu.backend("flash_attention_3");
  const std::string why = fa3.unsupported_reason(w.desc);
  if (why.find("head_dim") != std::string::npos) GTEST_SKIP() << why;  // a reduced build's head dims
  ASSERT_EQ(why, "");
  attnrt_forward_args host = w.forward_args();
  const ReferenceForward ref = reference_forward(w.desc, host);
  const double floor = spec.dtype == ATTNRT_DTYPE_BF16 ? 1e-2 : 1e-3;
  const auto& d = w.desc;
  const double elements = double(d.batch) * d.heads_q * d.seqlen_q * d.seqlen_k;
  if (!has_backward(spec.head_dim) || elements > kBackwardCheckElements) {
    const Errors base = run_forward(*gpu.backend("eager"), w, ref);
    const Errors got = run_forward(fa3, w, ref);
    expect_within("out", got.out, base.out, floor);
    expect_within("lse", got.lse, base.lse, 1e-3);
    testing::Test::RecordProperty("err_out", fmt::format("{:.3g} (eager {:.3g})", got.out, base.out));
    return;
  }
  const ReferenceBackward gref = reference_backward(w.desc, host, *w.dout.dl());
  const Errors base = run(*gpu.backend("eager"), w, ref, gref);
  const Errors got = run(fa3, w, ref, gref);
  expect_within("out", got.out, base.out, floor);
  expect_within("lse", got.lse, base.lse, 1e-3);
  expect_within("dq", got.dq, base.dq, floor);
  expect_within("dk", got.dk, base.dk, floor);
  expect_within("dv", got.dv, base.dv, floor);
  testing::Test::RecordProperty("err_out", fmt::format("{:.3g} (eager {:.3g})", got.out, base.out));
  testing::Test::RecordProperty("err_dq", fmt::format("{:.3g} (eager {:.3g})", got.dq, base.dq));
  testing::Test::RecordProperty("err_dk", fmt::format("{:.3g} (eager {:.3g})", got.dk, base.dk));
}

class FlashAttention3 : public testing::TestWithParam<Case> {};

TEST_P(FlashAttention3, MatchesEagerRule) {
  if (const std::string why = fa3_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  check(GetParam().spec);
}

// Edge cases by hand: lengths around the 128-row and 64/128/192-key tiles, masked rows, GQA 32.
std::vector<Case> edge_cases() {
  std::vector<Case> cases;
  for (attnrt_dtype dt : {ATTNRT_DTYPE_BF16, ATTNRT_DTYPE_FP16}) {
    for (int hd : {64, 96, 128, 192, 256}) {
      const std::string p = fmt::format("{}_hd{}_", dt == ATTNRT_DTYPE_FP16 ? "fp16" : "bf16", hd);
      for (int len : {1, 17, 113, 128, 129, 1000}) {
        cases.push_back({p + fmt::format("plain_{}", len), shape(dt, hd, 2, len, len, 4, 4)});
        WorkloadSpec s = shape(dt, hd, 1, len, len, 8, 2);
        s.causal = true;
        cases.push_back({p + fmt::format("gqa4_causal_{}", len), s});
      }
      if (hd == 128) {  // the fp64 reference's cost (seconds per head) caps the long cases
        WorkloadSpec s = shape(dt, hd, 1, 4097, 4097, 4, 1);
        s.causal = true;
        cases.push_back({p + "mqa_causal_4097", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 1, 300, 77, 4, 4);  // rows 0..222 see no key
        s.causal = true;
        cases.push_back({p + "causal_sq_gt_sk_300x77", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 1, 77, 300, 32, 1);
        s.causal = true;
        cases.push_back({p + "gqa32_causal_77x300", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 2, 333, 333, 4, 2);
        s.window_left = 40;
        s.window_right = 17;
        cases.push_back({p + "window_333", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 2, 200, 250, 4, 4);
        s.softcap = 5.0f;
        s.causal = true;
        cases.push_back({p + "softcap_causal_200x250", s});
      }
      // More tiles than the H100's 132 SMs, so persistent CTAs walk several: dealt in turn
      // (plain), taken from the counter (causal; varlen with a window, with tiles to skip).
      cases.push_back({p + "persistent_plain_b24_200", shape(dt, hd, 24, 200, 200, 4, 2)});
      {
        WorkloadSpec s = shape(dt, hd, 24, 200, 200, 4, 2);
        s.causal = true;
        cases.push_back({p + "persistent_causal_b24_200", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 6, 0, 0, 8, 2);
        s.seqlens_q = {300, 0, 1, 257, 129, 400};
        s.seqlens_k = {300, 7, 1, 100, 129, 450};
        s.window_left = 50;
        s.window_right = 10;
        cases.push_back({p + "persistent_varlen_window", s});
      }
      {
        WorkloadSpec s = shape(dt, hd, 5, 0, 0, 8, 1);
        s.seqlens_q = {0, 1, 130, 257, 64};
        s.seqlens_k = {5, 1, 0, 300, 64};
        s.causal = true;
        cases.push_back({p + "varlen_empty_one_token_causal", s});
      }
    }
  }
  return cases;
}

// Random cases: every feature and combination the plugin advertises, lengths drawn from odd
// sizes, a fixed seed so a failure names a case that reproduces.
// head_dims: drawn from these (the second grid: 96, run padded on the 128 kernel, and 192, each
// forward only, beside the first grid's unchanged draws).
std::vector<Case> random_cases(int count, std::initializer_list<int> head_dims = {64, 128, 128, 256},
                               uint32_t seed = 20261123, const char* prefix = "r") {
  std::mt19937 rng(seed);
  auto pick = [&](std::initializer_list<int> xs) {
    std::vector<int> v(xs);
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  auto coin = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  std::vector<Case> cases;
  for (int n = 0; n < count; ++n) {
    const attnrt_dtype dt = coin(0.5) ? ATTNRT_DTYPE_BF16 : ATTNRT_DTYPE_FP16;
    const int hd = pick(head_dims);
    const int group = pick({1, 1, 4, 8, 32});
    const int hkv = group == 32 ? 1 : pick({1, 2});
    const bool varlen = coin(0.3);
    const int batch = varlen ? pick({1, 2, 3, 4}) : pick({1, 2});
    auto length = [&] { return pick({1, 2, 17, 64, 100, 113, 127, 128, 129, 200, 255, 256, 257, 384, 500, 1000}); };
    WorkloadSpec s = shape(dt, hd, batch, length(), length(), hkv * group, hkv);
    if (coin(0.5)) s.seqlen_k = s.seqlen_q;
    if (varlen) {
      s.seqlen_q = s.seqlen_k = 0;
      for (int b = 0; b < batch; ++b) {
        // Empty sequences, but never all of them: the call needs a longest one.
        s.seqlens_q.push_back(coin(0.15) && b > 0 ? 0 : length());
        s.seqlens_k.push_back(coin(0.5) ? s.seqlens_q.back() : (coin(0.1) ? 0 : length()));
      }
      // Nor every key sequence: the call needs keys. No draw here, so the other cases stay.
      if (std::all_of(s.seqlens_k.begin(), s.seqlens_k.end(), [](int k) { return k == 0; })) s.seqlens_k.back() = 1;
    }
    const int mask = pick({0, 1, 1, 2, 3});  // none, causal, window, causal + window
    s.causal = mask == 1 || mask == 3;
    if (mask >= 2) {
      s.window_left = pick({0, 1, 16, 63, 127, 300});
      if (mask == 2) s.window_right = pick({0, 5, 64, 200});
    }
    if (coin(0.2)) s.softcap = pick({1, 5, 30});
    s.seed = 1000 + static_cast<uint64_t>(n);
    const std::string lens = varlen ? "varlen" : fmt::format("{}x{}", s.seqlen_q, s.seqlen_k);
    cases.push_back(
        {fmt::format("{}{:03}_{}_hd{}_b{}_h{}x{}_{}{}{}{}", prefix, n, dt == ATTNRT_DTYPE_FP16 ? "fp16" : "bf16", hd,
                     batch, s.heads_q, hkv, lens, s.causal ? "_causal" : "",
                     s.window_left >= 0 ? fmt::format("_wl{}", s.window_left) : "", s.softcap > 0 ? "_softcap" : ""),
         s});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Edge, FlashAttention3, testing::ValuesIn(edge_cases()),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.name; });
INSTANTIATE_TEST_SUITE_P(Random, FlashAttention3, testing::ValuesIn(random_cases(400)),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.name; });
INSTANTIATE_TEST_SUITE_P(RandomHd96Hd192, FlashAttention3,
                         testing::ValuesIn(random_cases(80, {96, 192}, 20261126, "p")),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(FlashAttention3Support, RefusesWithReasons) {
  if (const std::string why = fa3_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  Backend& fa3 = *gpu.backend("flash_attention_3");
  Workload w = gpu_workload(gpu, shape(ATTNRT_DTYPE_BF16, 128, 1, 64, 64, 2, 2));
  EXPECT_EQ(fa3.unsupported_reason(w.desc), "");
  EXPECT_TRUE(fa3.has_backward());
  auto refused = [&](auto mutate, const char* needle) {
    attnrt_attention_desc d = w.desc;
    mutate(d);
    const std::string why = fa3.unsupported_reason(d);
    EXPECT_NE(why.find(needle), std::string::npos) << "reason was: '" << why << "'";
  };
  refused([](attnrt_attention_desc& d) { d.dtype = ATTNRT_DTYPE_FP32; }, "dtype fp32");
  // Padded onto the 128 kernel: 96 (a quarter of its columns), not 80 (more than that).
  refused([](attnrt_attention_desc& d) { d.head_dim = d.head_dim_v = 80; }, "head_dim 80");
  refused([](attnrt_attention_desc& d) { d.head_dim = d.head_dim_v = 100; }, "head_dim 100");
  attnrt_attention_desc hd96 = w.desc;
  hd96.head_dim = hd96.head_dim_v = 96;
  EXPECT_EQ(fa3.unsupported_reason(hd96), "");
  refused([](attnrt_attention_desc& d) { d.has_sinks = 1; }, "sinks");
  refused([](attnrt_attention_desc& d) { d.cuda_arch = 80; }, "sm_80");
  attnrt_attention_desc deterministic = w.desc;
  deterministic.deterministic = 1;
  EXPECT_EQ(fa3.unsupported_reason(deterministic), "");
}

// An output that is not [batch, seqlen, heads, head_dim] compact: head-major, with rows padded by
// 8 elements (a strided view, as a PyTorch client may pass). O leaves the forward by TMA stores
// through a map of the output's own strides (CallLayout::out_map), which must write every row and
// no element past a row's head_dim: the padding keeps the NaN it was filled with. At head_dim 96
// (padded onto the 128 kernel: the map clips the kernel's last 32 columns) and 128, with a causal
// mask and a last tile that is not whole.
TEST(FlashAttention3Support, WritesAStridedOutputAndNothingPastItsRows) {
  if (const std::string why = fa3_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  for (const int hd : {96, 128}) {
    WorkloadSpec spec = shape(ATTNRT_DTYPE_BF16, hd, 2, 200, 200, 4, 2);
    spec.causal = true;
    spec.backward = false;
    Workload w = gpu_workload(gpu, spec);
    const attnrt_attention_desc& d = w.desc;
    const ReferenceForward ref = reference_forward(d, w.forward_args());
    const Errors base = run_forward(*gpu.backend("eager"), w, ref);
    const int64_t B = d.batch, S = d.seqlen_q, H = d.heads_q, D = hd, pitch = D + 8;
    HostTensor padded({B, H, S, pitch}, w.out.dtype());
    for (int64_t i = 0; i < padded.numel(); ++i) padded.set(i, std::numeric_limits<double>::quiet_NaN());
    DeviceTensor device_padded(padded, d.device);
    DLTensor view = *device_padded.dl();
    int64_t view_shape[4] = {B, S, H, D}, view_strides[4] = {H * S * pitch, pitch, S * pitch, 1};
    view.shape = view_shape;
    view.strides = view_strides;
    DeviceWorkload dw(w, d.device);
    attnrt_forward_args fa = dw.forward_args();
    fa.out = &view;
    gpu.backend("flash_attention_3")->forward(d, fa, 0);
    device_padded.download(padded);
    double err = 0;
    int64_t written_padding = 0;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t t = 0; t < S; ++t) {
          for (int64_t c = 0; c < pitch; ++c) {
            const double got = padded.get(((b * H + h) * S + t) * pitch + c);
            if (c >= D) {
              written_padding += std::isnan(got) ? 0 : 1;
            } else {
              const double e = std::abs(got - ref.out[size_t(((b * S + t) * H + h) * D + c)]);
              err = std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(err, e);
            }
          }
        }
      }
    }
    SCOPED_TRACE(fmt::format("head_dim {}", hd));
    expect_within("out", err, base.out, 1e-2);
    EXPECT_EQ(written_padding, 0) << "elements written past the rows' head_dim";
  }
}

// Paged KV forward: pages shuffled by the workload (block_table indirects), against the fp64
// reference and CUDA eager under the rule. The rows of each sequence's last page past its keys
// are NaN for flash_attention_3's run (the ABI lets a cache hold anything there): its P is 0
// there, and 0 * NaN must not reach the output.
class FlashAttention3Paged : public testing::TestWithParam<Case> {};

void poison_page_tails(Workload& w) {
  const attnrt_attention_desc& d = w.desc;
  const int64_t max_pages = w.block_table.shape()[1];
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t keys = static_cast<int64_t>(w.seqused_k.get(b));
    if (keys % d.page_size == 0) continue;
    const int64_t page = static_cast<int64_t>(w.block_table.get(b * max_pages + keys / d.page_size));
    for (HostTensor* t : {&w.k, &w.v}) {
      const int64_t dim = t->shape()[3];
      for (int64_t r = keys % d.page_size; r < d.page_size; ++r) {
        for (int64_t x = 0; x < int64_t(d.heads_kv) * dim; ++x) {
          t->set((page * d.page_size + r) * d.heads_kv * dim + x, std::numeric_limits<double>::quiet_NaN());
        }
      }
    }
  }
}

TEST_P(FlashAttention3Paged, MatchesEagerRuleWithNanPastTheKeys) {
  if (const std::string why = fa3_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  Workload w = gpu_workload(gpu, GetParam().spec);
  Backend& fa3 = *gpu.backend("flash_attention_3");
  const std::string why = fa3.unsupported_reason(w.desc);
  if (why.find("head_dim") != std::string::npos && why.find("page") == std::string::npos) GTEST_SKIP() << why;
  ASSERT_EQ(why, "");
  attnrt_forward_args host = w.forward_args();
  const ReferenceForward ref = reference_forward(w.desc, host);
  const Errors base = run_forward(*gpu.backend("eager"), w, ref);
  poison_page_tails(w);
  const Errors got = run_forward(fa3, w, ref);
  const double floor = GetParam().spec.dtype == ATTNRT_DTYPE_BF16 ? 1e-2 : 1e-3;
  expect_within("out", got.out, base.out, floor);
  expect_within("lse", got.lse, base.lse, 1e-3);
  testing::Test::RecordProperty("err_out", fmt::format("{:.3g} (eager {:.3g})", got.out, base.out));
}

std::vector<Case> paged_cases() {
  std::vector<Case> cases;
  auto paged = [](attnrt_dtype dt, int hd, int batch, int sq, int sk, int hq, int hkv, int page) {
    WorkloadSpec s = shape(dt, hd, batch, sq, sk, hq, hkv);
    s.paged = true;
    s.page_size = page;
    s.backward = false;
    return s;
  };
  WorkloadSpec s = paged(ATTNRT_DTYPE_BF16, 128, 3, 300, 1000, 8, 2, 128);
  s.causal = true;
  cases.push_back({"bf16_hd128_gqa4_causal_300x1000_page128", s});
  cases.push_back({"fp16_hd128_plain_513_page256", paged(ATTNRT_DTYPE_FP16, 128, 2, 513, 513, 4, 4, 256)});
  cases.push_back({"bf16_hd128_short_17x777_page128", paged(ATTNRT_DTYPE_BF16, 128, 4, 17, 777, 32, 8, 128)});
  s = paged(ATTNRT_DTYPE_BF16, 64, 2, 200, 450, 8, 1, 128);
  s.window_left = 100;
  s.causal = true;
  cases.push_back({"bf16_hd64_mqa_causal_window_200x450_page128", s});
  s = paged(ATTNRT_DTYPE_FP16, 64, 1, 129, 129, 2, 2, 384);
  s.softcap = 30;
  cases.push_back({"fp16_hd64_softcap_129_page384", s});
  cases.push_back({"bf16_hd96_plain_250x600_page128", paged(ATTNRT_DTYPE_BF16, 96, 2, 250, 600, 4, 2, 128)});
  s = paged(ATTNRT_DTYPE_BF16, 192, 2, 100, 500, 4, 4, 192);
  s.causal = true;
  cases.push_back({"bf16_hd192_causal_100x500_page192", s});
  cases.push_back({"bf16_hd256_plain_64x300_page128", paged(ATTNRT_DTYPE_BF16, 256, 2, 64, 300, 4, 2, 128)});
  // Chunked prefill: packed queries over the cache (ABI 1.2), an empty and a one-token chunk.
  s = paged(ATTNRT_DTYPE_BF16, 128, 0, 0, 0, 8, 2, 128);
  s.seqlens_q = {5, 1, 300, 0};
  s.seqlens_k = {700, 129, 300, 40};
  s.causal = true;
  cases.push_back({"bf16_hd128_chunked_prefill_causal_page128", s});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cases, FlashAttention3Paged, testing::ValuesIn(paged_cases()),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(FlashAttention3Support, RefusesPagesSmallerThanABlockAndPagedDecode) {
  if (const std::string why = fa3_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  Backend& fa3 = *gpu.backend("flash_attention_3");
  WorkloadSpec spec = shape(ATTNRT_DTYPE_BF16, 128, 1, 64, 256, 2, 2);
  spec.paged = true;
  spec.page_size = 64;
  Workload w = gpu_workload(gpu, spec);
  EXPECT_NE(fa3.unsupported_reason(w.desc).find("page_size 64"), std::string::npos) << fa3.unsupported_reason(w.desc);
  attnrt_attention_desc d = w.desc;
  d.page_size = 256;
  EXPECT_EQ(fa3.unsupported_reason(d), "");
  // Decode over pages is paged_attention's (one read of each page per KV head).
  d.seqlen_q = 16;
  EXPECT_NE(fa3.unsupported_reason(d).find("decode-sized"), std::string::npos) << fa3.unsupported_reason(d);
}

// Deterministic backward: within the rule, and the same call twice gives the same dq, dk and dv
// bit for bit (the dQ additions of the key blocks in a fixed order; without it they race).
class FlashAttention3Deterministic : public testing::TestWithParam<Case> {};

TEST_P(FlashAttention3Deterministic, RepeatsBitForBitWithinTheRule) {
  if (const std::string why = fa3_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  Workload w = gpu_workload(gpu, GetParam().spec);
  Backend& fa3 = *gpu.backend("flash_attention_3");
  attnrt_forward_args host = w.forward_args();
  const ReferenceForward ref = reference_forward(w.desc, host);
  const ReferenceBackward gref = reference_backward(w.desc, host, *w.dout.dl());
  const Errors base = run(*gpu.backend("eager"), w, ref, gref);
  w.desc.deterministic = 1;
  const std::string why = fa3.unsupported_reason(w.desc);
  if (why.find("head_dim") != std::string::npos) GTEST_SKIP() << why;
  ASSERT_EQ(why, "");
  const double floor = GetParam().spec.dtype == ATTNRT_DTYPE_BF16 ? 1e-2 : 1e-3;
  const Errors got = run(fa3, w, ref, gref);
  expect_within("dq", got.dq, base.dq, floor);
  expect_within("dk", got.dk, base.dk, floor);
  expect_within("dv", got.dv, base.dv, floor);
  auto bytes = [](const HostTensor& t) {
    const auto* p = static_cast<const unsigned char*>(t.data());
    return std::vector<unsigned char>(p, p + t.nbytes());
  };
  const std::vector<unsigned char> dq = bytes(w.dq), dk = bytes(w.dk), dv = bytes(w.dv);
  for (int repeat = 0; repeat < 3; ++repeat) {
    run(fa3, w, ref, gref);
    EXPECT_TRUE(bytes(w.dq) == dq) << "dq differs in repeat " << repeat;
    EXPECT_TRUE(bytes(w.dk) == dk) << "dk differs in repeat " << repeat;
    EXPECT_TRUE(bytes(w.dv) == dv) << "dv differs in repeat " << repeat;
  }
}

std::vector<Case> deterministic_cases() {
  std::vector<Case> cases;
  for (int hd : {64, 128}) {
    const std::string p = fmt::format("hd{}_", hd);
    cases.push_back({p + "plain_b2_1000", shape(ATTNRT_DTYPE_BF16, hd, 2, 1000, 1000, 4, 4)});
    WorkloadSpec causal = shape(ATTNRT_DTYPE_BF16, hd, 1, 1500, 1500, 8, 2);
    causal.causal = true;
    cases.push_back({p + "gqa4_causal_1500", causal});
    WorkloadSpec window = shape(ATTNRT_DTYPE_FP16, hd, 2, 700, 900, 4, 1);
    window.window_left = 200;
    window.window_right = 30;
    cases.push_back({p + "mqa_window_700x900", window});
    WorkloadSpec varlen = shape(ATTNRT_DTYPE_BF16, hd, 4, 0, 0, 4, 2);
    varlen.seqlens_q = {300, 1, 0, 517};
    varlen.seqlens_k = {300, 64, 5, 900};
    varlen.causal = true;
    cases.push_back({p + "varlen_causal", varlen});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cases, FlashAttention3Deterministic, testing::ValuesIn(deterministic_cases()),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.name; });

// A backward at a head_dim with neither this family's tiles nor flash_attention_2's kernels
// (120, whose forward runs padded on the 128 kernel) is refused by name, not run.
TEST(FlashAttention3Support, RefusesBackwardWithoutKernels) {
  if (const std::string why = fa3_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  Backend& fa3 = *gpu.backend("flash_attention_3");
  Workload w = gpu_workload(gpu, shape(ATTNRT_DTYPE_BF16, 120, 1, 64, 64, 2, 2));
  if (!fa3.unsupported_reason(w.desc).empty()) GTEST_SKIP() << "head_dim 128 is not in this build";
  DeviceWorkload dw(w, w.desc.device);
  attnrt_forward_args fa = dw.forward_args();
  fa3.forward(w.desc, fa, 0);
  attnrt_backward_args ba = dw.backward_args();
  try {
    fa3.backward(w.desc, ba, 0);
    ADD_FAILURE() << "a head_dim 120 backward ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no backward at head_dim 120"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attnrt
