// paged_attention on the GPU against FlashAttention's rule (gpu.md): its error against the fp64
// reference, computed on a non-paged copy of the same data (paged_case.hpp), is at most 2x CUDA
// eager's on the same paged call, plus a small floor (and so is sdpa's, cuDNN's paged path, where
// cuDNN takes the case); where flash_attention_2 takes the case, its output on the same data, not
// paged, agrees within that rule; NaN never passes (unused pages and the tails of partly used
// pages hold NaN, block tables are -1 padded, outputs are poisoned). Cases: fp16/bf16 x the
// compiled head dims x {decode, multi-token decode, padded and varlen chunked prefill} x page
// sizes 1/16/64/256 x GQA 1-16, sliding window, softcap, sinks, sequence lengths 1 to 128k in one
// batch; split-KV forced to several counts equals the unsplit call within the rule; the KV-cache
// append through a slot mapping.
#include <attnrt/runtime/cuda_memory.hpp>

#include "gpu_support.hpp"
#include "paged_case.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attnrt::gpu_test {
namespace {

using test::make_paged_case;
using test::PagedCase;
using test::PagedSpec;

struct PagedNamed {
  std::string name;
  PagedSpec spec;
};
void PrintTo(const PagedNamed& n, std::ostream* os) { *os << n.name; }

// The paged plugin, or the reason it cannot run here.
std::string paged_skip_reason() {
  Gpu& gpu = Gpu::get();
  if (!gpu.skip_reason.empty()) return gpu.skip_reason;
  if (!gpu.registry->find("paged_attention", "cuda")) return "the CUDA plugin 'paged_attention' is not built";
  return "";
}

void on_gpu(PagedCase& c) {
  for (Workload* w : {&c.paged, &c.dense}) {
    w->desc.device = Gpu::get().device.dl;
    w->desc.cuda_arch = Gpu::get().device.cuda_arch;
  }
}

// out / lse errors of `backend` on the paged call against the dense reference.
Errors paged_errors(Backend& backend, PagedCase& c, const ReferenceForward& ref) {
  DeviceWorkload dw(c.paged, c.paged.desc.device);
  attnrt_forward_args fa = dw.forward_args();
  dw.poison_forward_outputs();
  backend.forward(c.paged.desc, fa, 0);
  dw.download_forward_outputs();
  Errors e;
  e.out = test::max_error(test::values(c.paged.out), ref.out);
  e.lse = test::max_error(test::lse_as_varlen(c), ref.lse);
  return e;
}

ReferenceForward dense_reference(PagedCase& c) {
  Workload host = c.dense;
  host.desc.device = DLDevice{kDLCPU, 0};
  return reference_forward(host.desc, host.forward_args());
}

std::vector<int> head_dims() {
#ifdef ATTNRT_PAGED_TEST_HEAD_DIMS
  return {ATTNRT_PAGED_TEST_HEAD_DIMS};
#else
  return {128};
#endif
}

std::vector<PagedNamed> cases() {
  std::vector<PagedNamed> v;
  for (attnrt_dtype dt : {ATTNRT_DTYPE_BF16, ATTNRT_DTYPE_FP16}) {
    const std::string dn = dt == ATTNRT_DTYPE_BF16 ? "bf16" : "fp16";
    for (int hd : head_dims()) {
      const std::string p = dn + "_hd" + std::to_string(hd) + "_";
      auto add = [&](const std::string& name, PagedSpec s) {
        s.dtype = dt;
        s.head_dim = hd;
        s.seed = std::hash<std::string>{}(p + name);
        v.push_back({p + name, s});
      };
      for (int ps : {1, 16, 64, 256}) {
        PagedSpec s;
        s.q_lens = {1, 1, 1, 1};
        s.k_lens = {1, 1000, 77, 4096};
        s.heads_q = 32;
        s.heads_kv = 8;
        s.page_size = ps;
        add("decode_gqa4_page" + std::to_string(ps), s);
      }
      for (int group : {1, 2, 8, 16}) {
        PagedSpec s;
        s.q_lens = {1, 1};
        s.k_lens = {333, 2048};
        s.heads_kv = 2;
        s.heads_q = 2 * group;
        add("decode_gqa" + std::to_string(group), s);
      }
      for (int q : {2, 5, 16}) {
        PagedSpec s;
        s.q_lens = {q, q, q};
        s.k_lens = {q, 500, 1200};
        s.heads_q = 16;
        s.heads_kv = 2;
        add("multi_token" + std::to_string(q), s);
      }
      {
        PagedSpec s;
        s.q_lens = {64, 64};
        s.k_lens = {64, 700};
        add("padded_chunked_prefill", s);
      }
      {
        PagedSpec s;
        s.q_lens = {100, 1, 37, 256};
        s.k_lens = {100, 900, 37, 2000};
        s.varlen_q = true;
        s.heads_q = 8;
        s.heads_kv = 2;
        add("varlen_chunked_prefill", s);
      }
      {
        PagedSpec s;
        s.q_lens = {1, 1, 1};
        s.k_lens = {1, 131072, 3000};
        s.heads_q = 8;
        s.heads_kv = 1;
        s.page_size = 64;
        add("lengths_1_to_128k", s);
      }
      {
        PagedSpec s;
        s.q_lens = {4, 4};
        s.k_lens = {0, 800};
        add("empty_sequence", s);
      }
      {
        PagedSpec s;
        s.q_lens = {1, 1, 1};
        s.k_lens = {700, 0, 45};
        add("decode_empty_sequence", s);
      }
      {
        PagedSpec s;
        s.q_lens = {1, 1};
        s.k_lens = {0, 900};
        s.window_left = 127;
        add("decode_window_empty_sequence", s);
      }
      {
        PagedSpec s;
        s.q_lens = {3, 3};
        s.k_lens = {600, 1500};
        s.window_left = 127;
        add("sliding_window", s);
      }
      {
        PagedSpec s;
        s.q_lens = {1, 1};
        s.k_lens = {640, 3000};
        s.softcap = 30.0f;
        add("softcap", s);
      }
      {
        PagedSpec s;
        s.q_lens = {2, 2};
        s.k_lens = {0, 2500};
        s.sinks = true;
        s.window_left = 127;
        s.heads_q = 64;
        s.heads_kv = 8;
        add("gptoss_sinks_window", s);
      }
    }
  }
  return v;
}

class PagedGpu : public ::testing::TestWithParam<PagedNamed> {};

TEST_P(PagedGpu, WithinTwiceEagerOfTheReference) {
  if (const std::string why = paged_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  PagedCase c = make_paged_case(GetParam().spec);
  on_gpu(c);
  const ReferenceForward ref = dense_reference(c);
  auto paged = gpu.backend("paged_attention");
  ASSERT_EQ(paged->unsupported_reason(c.paged.desc), "");
  const Errors base = paged_errors(*gpu.backend("eager"), c, ref);
  // The baseline itself must be sane (a wrong eager would loosen the rule): outputs are averages
  // of unit normals, so a half-precision path is off by a few 1e-3 at most.
  EXPECT_LT(base.out, 0.05) << "CUDA eager's own error";
  const Errors got = paged_errors(*paged, c, ref);
  expect_within("out", got.out, base.out, 1e-4);
  expect_within("lse", got.lse, base.lse, 1e-4);
  const std::vector<double> paged_out = test::values(c.paged.out);

  // sdpa on cuDNN (its paged path: page tables, forward only) where it takes the case.
  if (gpu.registry->find("sdpa", "cuda")) {
    auto sdpa = gpu.backend("sdpa");
    if (const std::string why = sdpa->unsupported_reason(c.paged.desc); why.empty()) {
      const Errors cudnn = paged_errors(*sdpa, c, ref);
      expect_within("sdpa (cuDNN) out", cudnn.out, base.out, 1e-4);
      expect_within("sdpa (cuDNN) lse", cudnn.lse, base.lse, 1e-4);
    } else {
      RecordProperty("sdpa", why);
    }
  }

  // attnrt's flash kernel on the same data, not paged (the dense varlen call the reference ran):
  // where flash_attention_2 takes the case, the two outputs agree within the same rule, plus one
  // unit in the last place of the largest output (each kernel rounds its fp32 result to the
  // dtype on its own, so two correct outputs may sit one ulp apart).
  auto flash = gpu.backend("flash_attention_2");
  if (flash->unsupported_reason(c.dense.desc).empty()) {
    DeviceWorkload dw(c.dense, c.dense.desc.device);
    const Errors fa2 = forward_errors(*flash, c.dense, dw, ref);
    expect_within("flash_attention_2 out", fa2.out, base.out, 1e-4);
    double largest = 0;
    for (double x : ref.out) largest = std::max(largest, std::fabs(x));
    const double ulp = largest * std::ldexp(1.0, c.paged.desc.dtype == ATTNRT_DTYPE_BF16 ? -7 : -10);
    expect_within("paged vs flash_attention_2 out", test::max_error(paged_out, test::values(c.dense.out)), base.out,
                  ulp + 1e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, PagedGpu, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<PagedNamed>& i) { return i.param.name; });

// Split-KV: the same call unsplit (ATTNRT_PAGED_SPLITS=1) and forced to 2, 7, 33 and 64 splits (the
// combine takes a warp a row up to 8 splits, a block a row above), with blocks of one group and,
// where the head_dim allows it, of two (ATTNRT_PAGED_GROUPS=2: each block's keys in two halves
// that it merges itself); each within the rule, and the results close to the unsplit ones.
TEST(PagedGpuSplit, SplitsEqualUnsplitWithinTheRule) {
  if (const std::string why = paged_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  PagedSpec s;
  s.dtype = ATTNRT_DTYPE_BF16;
  s.head_dim = head_dims().front();
  s.q_lens = {1, 1, 1};
  s.k_lens = {5, 3000, 9000};
  s.heads_q = 32;
  s.heads_kv = 8;
  s.sinks = true;
  PagedCase c = make_paged_case(s);
  on_gpu(c);
  const ReferenceForward ref = dense_reference(c);
  const Errors base = paged_errors(*gpu.backend("eager"), c, ref);
  std::vector<double> unsplit;
  for (const char* groups : {"1", "2"}) {
    for (const char* splits : {"1", "2", "7", "33", "64"}) {
      ScopedEnv env("ATTNRT_PAGED_SPLITS", splits);
      ScopedEnv env_groups("ATTNRT_PAGED_GROUPS", groups);
      Backend backend(gpu.registry->load(*gpu.registry->find("paged_attention", "cuda")));
      const Errors got = paged_errors(backend, c, ref);
      SCOPED_TRACE(std::string("splits ") + splits + ", groups " + groups);
      expect_within("out", got.out, base.out, 1e-4);
      expect_within("lse", got.lse, base.lse, 1e-4);
      if (unsplit.empty()) {
        unsplit = test::values(c.paged.out);
      } else {
        expect_within("split vs unsplit", test::max_error(test::values(c.paged.out), unsplit), base.out, 1e-4);
      }
    }
  }
}

// ABI 1.2's append_kv on the GPU: tokens through a shuffled slot mapping with padding slots
// (-1) fill a NaN cache; then attention over it is within the rule.
TEST(PagedGpuAppend, SlotMappingFillsTheCache) {
  if (const std::string why = paged_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  PagedSpec s;
  s.dtype = ATTNRT_DTYPE_BF16;
  s.head_dim = head_dims().front();
  s.q_lens = {1, 1};
  s.k_lens = {33, 300};
  PagedCase c = make_paged_case(s);
  on_gpu(c);
  const ReferenceForward ref = dense_reference(c);
  auto paged = gpu.backend("paged_attention");
  ASSERT_TRUE(paged->has_append_kv());

  const int64_t row = int64_t(s.heads_kv) * s.head_dim;
  std::vector<std::pair<int32_t, int32_t>> tokens;
  for (int32_t b = 0; b < 2; ++b)
    for (int32_t t = 0; t < s.k_lens[b]; ++t) tokens.emplace_back(b, t);
  std::mt19937_64 rng(11);
  std::shuffle(tokens.begin(), tokens.end(), rng);
  const int64_t n = int64_t(tokens.size()) + 1;  // the last token is padding
  const DLDataType bf16{kDLBfloat, 16, 1};
  HostTensor k_new({n, s.heads_kv, s.head_dim}, bf16), v_new({n, s.heads_kv, s.head_dim}, bf16);
  k_new.fill_nan();
  v_new.fill_nan();
  std::vector<int64_t> slots(size_t(n), -1);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto [b, t] = tokens[i];
    slots[i] = int64_t(c.pages_of[size_t(b) * c.max_pages + t / s.page_size]) * s.page_size + t % s.page_size;
    for (int64_t e = 0; e < row; ++e) {
      k_new.set(int64_t(i) * row + e, c.paged.k.get(slots[i] * row + e));
      v_new.set(int64_t(i) * row + e, c.paged.v.get(slots[i] * row + e));
    }
  }
  PagedCase filled = c;
  filled.paged.k.fill_nan();
  filled.paged.v.fill_nan();
  DeviceWorkload dw(filled.paged, filled.paged.desc.device);
  attnrt_forward_args fa = dw.forward_args();
  const DLDevice dev = filled.paged.desc.device;
  CudaBuffer kn(dev, k_new.nbytes()), vn(dev, v_new.nbytes()), sm(dev, slots.size() * sizeof(int64_t));
  kn.upload(k_new.data(), k_new.nbytes());
  vn.upload(v_new.data(), v_new.nbytes());
  sm.upload(slots.data(), slots.size() * sizeof(int64_t));
  DLTensor kn_t = *k_new.dl(), vn_t = *v_new.dl();
  kn_t.data = kn.data();
  kn_t.device = dev;
  vn_t.data = vn.data();
  vn_t.device = dev;
  int64_t slot_shape[1] = {n};
  DLTensor sm_t{sm.data(), dev, 1, DLDataType{kDLInt, 64, 1}, slot_shape, nullptr, 0};
  attnrt_append_kv_args a{sizeof a, &kn_t, &vn_t, &sm_t, const_cast<DLTensor*>(fa.k), const_cast<DLTensor*>(fa.v)};
  const attnrt_exec exec{sizeof exec, nullptr, nullptr, 0, 0};
  paged->append_kv(filled.paged.desc, a, exec);
  dw.poison_forward_outputs();
  paged->forward(filled.paged.desc, fa, 0);
  dw.download_forward_outputs();
  const Errors base = paged_errors(*gpu.backend("eager"), c, ref);
  expect_within("out after append", test::max_error(test::values(filled.paged.out), ref.out), base.out, 1e-4);
  expect_within("lse after append", test::max_error(test::lse_as_varlen(filled), ref.lse), base.lse, 1e-4);
}

}  // namespace
}  // namespace attnrt::gpu_test
