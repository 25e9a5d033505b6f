// flex_attention on CUDA (mods compiled by NVRTC into flash_attention_2's forward and backward;
// on sm_90 the forward is flash_attention_3's, linked with the mods by nvJitLink) against
// FlashAttention's rule (gpu.md): its error against the fp64 reference with the same mods
// (ReferenceMods, plain C++) is at most 2x the CPU flex_attention's on the same low-precision
// inputs, plus a small floor, for out and lse and for dq, dk and dv; outputs are poisoned with NaN
// first and NaN never passes. The mods are PyTorch FlexAttention's usual ones (causal, sliding
// window, prefix LM, document mask from an aux tensor, ALiBi, softcap, relative position bias from
// an aux table; score_mod_grad beside each score_mod) and block-sparse masks with skipped, partial
// and full blocks, at head_dim 64 and 128, fp16 and bf16, GQA, odd lengths and varlen. The
// forward runs both kernels on sm_90 (ATTNRT_FLEX_FORWARD), the backward flash_attention_3's
// kernel on sm_90 (ATTNRT_FLEX_BACKWARD) and flash_attention_2's dK/dV kernels: sm_90's and the
// split pair other GPUs take.
#include <attnrt/validate.hpp>

#include "flex_case.hpp"
#include "gpu_support.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>
#include <utility>

namespace attnrt::gpu_test {
namespace {

using test::Flex;

std::string flex_skip_reason() {
  Gpu& gpu = Gpu::get();
  if (!gpu.skip_reason.empty()) return gpu.skip_reason;
  if (!gpu.registry->find("flex_attention", "cuda")) return "the CUDA plugin 'flex_attention' is not built";
  if (!gpu.registry->find("flex_attention", "cpu")) return "the CPU plugin 'flex_attention' is not built";
  return "";
}

struct FlexCase {
  std::string name;
  WorkloadSpec spec;
  std::function<Flex(const WorkloadSpec&)> make;
};
void PrintTo(const FlexCase& c, std::ostream* os) { *os << c.name; }

WorkloadSpec shape(int batch, int sq, int sk, int hq, int hkv, int hd, attnrt_dtype dtype) {
  return test::flex_shape(batch, sq, sk, hq, hkv, hd, dtype, true);
}

std::vector<FlexCase> cases() {
  std::vector<FlexCase> out;
  for (attnrt_dtype dt : {ATTNRT_DTYPE_BF16, ATTNRT_DTYPE_FP16}) {
    for (int hd : {64, 128}) {
      const std::string tag = std::string(sdk::dtype_name(dt)) + "_hd" + std::to_string(hd);
      out.push_back({tag + "_causal", shape(2, 333, 333, 4, 2, hd, dt), [](const WorkloadSpec&) {
                       Flex f;
                       f.mask_mod = "q_idx >= kv_idx";
                       f.ref.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return i >= j; };
                       return f;
                     }});
      out.push_back({tag + "_sliding_window_100", shape(1, 517, 517, 4, 4, hd, dt), [](const WorkloadSpec&) {
                       Flex f;
                       f.mask_mod = "q_idx >= kv_idx && q_idx - kv_idx <= 100";
                       f.ref.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return i >= j && i - j <= 100; };
                       return f;
                     }});
      out.push_back({tag + "_prefix_lm", shape(1, 300, 300, 2, 1, hd, dt), [](const WorkloadSpec&) {
                       Flex f;
                       f.mask_mod = "kv_idx < 77 || q_idx >= kv_idx";
                       f.ref.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return j < 77 || i >= j; };
                       return f;
                     }});
      out.push_back({tag + "_document_mask", shape(2, 400, 400, 4, 2, hd, dt), [](const WorkloadSpec& s) {
                       Flex f;
                       HostTensor doc = test::i32({s.batch, s.seqlen_q});
                       for (int b = 0; b < s.batch; ++b)
                         for (int t = 0; t < s.seqlen_q; ++t)
                           doc.set(b * s.seqlen_q + t, t < 90 + 61 * b ? 0 : t < 260 ? 1 : 2);
                       f.aux.push_back(doc);
                       f.mask_mod = "aux0(b, q_idx) == aux0(b, kv_idx) && q_idx >= kv_idx";
                       f.ref.visible = [doc](int64_t b, int64_t, int64_t i, int64_t j) {
                         const int64_t n = doc.shape()[1];
                         return doc.get(b * n + i) == doc.get(b * n + j) && i >= j;
                       };
                       return f;
                     }});
      out.push_back({tag + "_alibi", shape(1, 257, 301, 8, 2, hd, dt), [](const WorkloadSpec& s) {
                       Flex f;
                       HostTensor slopes = test::f32({s.heads_q});
                       for (int h = 0; h < s.heads_q; ++h) slopes.set(h, std::exp2(-8.0 * (h + 1) / s.heads_q));
                       f.aux.push_back(slopes);
                       f.score_mod = "score + aux0(h) * (kv_idx - q_idx)";
                       f.score_mod_grad = "1.0f";
                       f.ref.score = [slopes](double x, int64_t, int64_t h, int64_t i, int64_t j) {
                         return x + slopes.get(h) * double(j - i);
                       };
                       return f;
                     }});
      out.push_back({tag + "_softcap", shape(2, 200, 200, 2, 2, hd, dt), [](const WorkloadSpec&) {
                       Flex f;
                       f.scalars = {20.0f};
                       f.score_mod = "scalar0 * tanhf(score / scalar0)";
                       f.score_mod_grad = "1.0f - tanhf(score / scalar0) * tanhf(score / scalar0)";
                       f.ref.score = [](double x, int64_t, int64_t, int64_t, int64_t) {
                         return 20.0 * std::tanh(x / 20.0);
                       };
                       f.ref.grad = [](double x, int64_t, int64_t, int64_t, int64_t) {
                         const double t = std::tanh(x / 20.0);
                         return 1.0 - t * t;
                       };
                       return f;
                     }});
      out.push_back({tag + "_relative_bias_causal", shape(1, 256, 256, 2, 2, hd, dt), [](const WorkloadSpec& s) {
                       Flex f;
                       HostTensor table = test::f32({s.heads_q, 2 * s.seqlen_q - 1});
                       std::mt19937_64 rng(5);
                       table.fill_normal(rng, 0.5);
                       f.aux.push_back(table);
                       f.score_mod = "score + aux0(h, q_idx - kv_idx + 255)";
                       f.score_mod_grad = "1.0f";
                       f.mask_mod = "q_idx >= kv_idx";
                       const int64_t width = table.shape()[1];
                       f.ref.score = [table, width](double x, int64_t, int64_t h, int64_t i, int64_t j) {
                         return x + table.get(h * width + (i - j + 255));
                       };
                       f.ref.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return i >= j; };
                       return f;
                     }});
      out.push_back({tag + "_random_block_sparse", shape(2, 640, 700, 4, 2, hd, dt), [](const WorkloadSpec& s) {
                       Flex f;
                       // 128 x 128 blocks (PyTorch's default): skipped, partial (a checkerboard
                       // mask_mod) or full, drawn per block, one mask for every sequence and head.
                       const int mq = 5, mk = 6;
                       std::mt19937 rng(11);
                       std::vector<int> state(mq * mk);
                       for (int& st : state) st = static_cast<int>(rng() % 3);
                       state[0] = 1;
                       test::set_block_mask(f, s.seqlen_q, s.seqlen_k, 128, 128,
                                            [state](int m, int n) { return state[m * 6 + n]; });
                       f.mask_mod = "((q_idx + kv_idx) % 3) != 0";
                       f.ref.visible = [state](int64_t, int64_t, int64_t i, int64_t j) {
                         const int st = state[(i / 128) * 6 + j / 128];
                         return st == 2 || (st == 1 && (i + j) % 3 != 0);
                       };
                       return f;
                     }});
      // Longer: the Hopper forward's persistent CTAs take several tiles each and walk a block
      // mask with skipped, partial and full blocks (a block-causal pattern over a local window).
      out.push_back({tag + "_block_causal_window_1k", shape(2, 1024, 1024, 12, 2, hd, dt), [](const WorkloadSpec& s) {
                       Flex f;
                       auto state = [](int m, int n) { return n > m || n < m - 4 ? 0 : n == m || n == m - 4 ? 1 : 2; };
                       test::set_block_mask(f, s.seqlen_q, s.seqlen_k, 128, 128, state);
                       f.mask_mod = "q_idx >= kv_idx && q_idx - kv_idx < 540";
                       f.score_mod = "score - 0.01f * (q_idx - kv_idx) / 16";
                       f.score_mod_grad = "1.0f";
                       f.ref.visible = [state](int64_t, int64_t, int64_t i, int64_t j) {
                         const int st = state(static_cast<int>(i / 128), static_cast<int>(j / 128));
                         return st == 2 || (st == 1 && i >= j && i - j < 540);
                       };
                       f.ref.score = [](double x, int64_t, int64_t, int64_t i, int64_t j) {
                         return x - 0.01 * double(i - j) / 16;
                       };
                       return f;
                     }});
      // The descriptor's own causal mask beside a score_mod (bottom-right, Sq < Sk).
      {
        WorkloadSpec s = shape(2, 300, 457, 4, 1, hd, dt);
        s.causal = true;
        out.push_back({tag + "_descriptor_causal", s, [](const WorkloadSpec&) {
                         Flex f;
                         f.score_mod = "score * 0.75f";
                         f.score_mod_grad = "0.75f";
                         f.ref.score = [](double x, int64_t, int64_t, int64_t, int64_t) { return 0.75 * x; };
                         return f;
                       }});
      }
      {
        WorkloadSpec s = shape(1, 1, 1, 4, 2, hd, dt);
        s.seqlens_q = {170, 1, 400};
        s.seqlens_k = {230, 90, 400};
        out.push_back({tag + "_varlen", s, [](const WorkloadSpec&) {
                         Flex f;
                         f.mask_mod = "kv_idx <= q_idx + 40";
                         f.score_mod = "score - 0.25f * b";
                         f.score_mod_grad = "1.0f";
                         f.ref.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i + 40; };
                         f.ref.score = [](double x, int64_t b, int64_t, int64_t, int64_t) {
                           return x - 0.25 * double(b);
                         };
                         return f;
                       }});
      }
    }
  }
  return out;
}

double floor_of(attnrt_dtype dtype) { return dtype == ATTNRT_DTYPE_FP16 ? 2e-4 : 2e-3; }
// dq, dk and dv: both sides round P and dS to the input dtype for their products.
double grad_floor_of(attnrt_dtype dtype) { return dtype == ATTNRT_DTYPE_FP16 ? 1e-3 : 1e-2; }

// A case's workload with the CPU flex_attention's errors on it (the baseline) and its mods on the
// GPU: aux tensors and block mask copied there and attached to w.desc.
struct Checked {
  Workload w;
  Flex f;
  ReferenceForward ref;
  ReferenceBackward gref;
  Errors base;
  std::vector<DeviceTensor> device_aux, device_mask;
};

// backward: also the gradients' reference and the CPU plugin's backward (the forward tests skip
// them: the CPU side is most of a case's time).
void prepare(const FlexCase& c, Checked& k, bool backward) {
  Gpu& gpu = Gpu::get();
  WorkloadSpec spec = c.spec;
  spec.seed = std::hash<std::string>{}(c.name);
  k.w = gpu_workload(gpu, spec);
  k.f = c.make(spec);
  Workload host = k.w;
  host.desc.device = DLDevice{kDLCPU, 0};
  host.desc.cuda_arch = 0;
  k.f.attach(host.desc);
  k.ref = reference_forward(host.desc, host.forward_args(), &k.f.ref);
  if (backward) k.gref = reference_backward(host.desc, host.forward_args(), *host.dout.dl(), &k.f.ref);
  Backend cpu(gpu.registry->load(*gpu.registry->find("flex_attention", "cpu")));
  ASSERT_EQ(cpu.unsupported_reason(host.desc), "");
  host.out.fill_nan();
  host.lse.fill_nan();
  cpu.forward(host.desc, host.forward_args(), 0);
  k.base.out = max_abs_error(*host.out.dl(), k.ref.out);
  k.base.lse = max_abs_error(*host.lse.dl(), k.ref.lse);
  if (backward) {
    cpu.backward(host.desc, host.backward_args(), 0);
    k.base.dq = max_abs_error(*host.dq.dl(), k.gref.dq);
    k.base.dk = max_abs_error(*host.dk.dl(), k.gref.dk);
    k.base.dv = max_abs_error(*host.dv.dl(), k.gref.dv);
  }

  Flex& f = k.f;
  for (HostTensor& t : f.aux) k.device_aux.emplace_back(t, k.w.desc.device);
  for (HostTensor* t : {&f.kv_num_blocks, &f.kv_indices, &f.full_kv_num_blocks, &f.full_kv_indices}) {
    k.device_mask.emplace_back(t->empty() ? DeviceTensor() : DeviceTensor(*t, k.w.desc.device));
  }
  f.attach(k.w.desc);
  f.aux_ptrs.clear();
  for (DeviceTensor& t : k.device_aux) f.aux_ptrs.push_back(t.dl());
  f.block.aux = f.aux_ptrs.data();
  if (!f.kv_num_blocks.empty()) {
    f.block.kv_num_blocks = k.device_mask[0].dl();
    f.block.kv_indices = k.device_mask[1].dl();
    f.block.full_kv_num_blocks = k.device_mask[2].empty() ? nullptr : k.device_mask[2].dl();
    f.block.full_kv_indices = k.device_mask[3].empty() ? nullptr : k.device_mask[3].dl();
  }
}

class FlexGpu : public ::testing::TestWithParam<FlexCase> {};

// Through both forward kernels: flash_attention_3's (sm_90 only; forced, so a call that does not
// take it fails with the reason) and flash_attention_2's.
TEST_P(FlexGpu, ForwardWithinTwiceTheCpuPluginsError) {
  if (const std::string why = flex_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Checked k;
  ASSERT_NO_FATAL_FAILURE(prepare(GetParam(), k, false));
  Backend& flex = *Gpu::get().backend("flex_attention");
  ASSERT_EQ(flex.unsupported_reason(k.w.desc), "");
  for (const char* path : {"hopper", "flash_attention_2"}) {
    if (std::string(path) == "hopper" && k.w.desc.cuda_arch != 90) continue;
    ScopedEnv env("ATTNRT_FLEX_FORWARD", path);
    ASSERT_EQ(flex.unsupported_reason(k.w.desc), "") << path;
    const Errors e = run_forward(flex, k.w, k.ref);
    const double fl = floor_of(k.w.desc.dtype) * std::max(1.0, max_abs(k.ref.out));
    EXPECT_LE(e.out, 2 * k.base.out + fl) << path << ": out (CPU flex_attention " << k.base.out << ")";
    EXPECT_LE(e.lse, 2 * k.base.lse + 2e-4) << path << ": lse (CPU flex_attention " << k.base.lse << ")";
    std::cout << "[ errors ] " << GetParam().name << " forward " << path << ": out " << e.out << " lse " << e.lse
              << " (CPU " << k.base.out << " " << k.base.lse << ")\n";
  }
}

// Forward and backward, the backward through flash_attention_3's kernel (sm_90 only; forced, so a
// call that does not take it fails with the reason), flash_attention_2's sm_90 dK/dV kernel
// (where the GPU has it) and its split pair (forced by ATTNRT_FA2_BACKWARD=split, as
// flash_attention_2's tests do).
TEST_P(FlexGpu, BackwardWithinTwiceTheCpuPluginsError) {
  if (const std::string why = flex_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Checked k;
  ASSERT_NO_FATAL_FAILURE(prepare(GetParam(), k, true));
  Backend& flex = *Gpu::get().backend("flex_attention");
  ASSERT_EQ(flex.unsupported_reason(k.w.desc), "");
  const attnrt_dtype dt = k.w.desc.dtype;
  struct Path {
    const char *flex, *fa2, *name;
  };
  for (const Path& path : {Path{"hopper", nullptr, " (Hopper)"}, Path{"flash_attention_2", nullptr, " (dK/dV)"},
                           Path{"flash_attention_2", "split", " (split dK/dV)"}}) {
    if (std::string(path.flex) == "hopper" && k.w.desc.cuda_arch != 90) continue;
    ScopedEnv flex_env("ATTNRT_FLEX_BACKWARD", path.flex);
    ScopedEnv fa2_env("ATTNRT_FA2_BACKWARD", path.fa2);
    const Errors e = run(flex, k.w, k.ref, k.gref);
    const std::string where = path.name;
    EXPECT_LE(e.out, 2 * k.base.out + floor_of(dt) * std::max(1.0, max_abs(k.ref.out))) << "out" << where;
    EXPECT_LE(e.dq, 2 * k.base.dq + grad_floor_of(dt) * std::max(1.0, max_abs(k.gref.dq)))
        << "dq" << where << " (CPU flex_attention " << k.base.dq << ")";
    EXPECT_LE(e.dk, 2 * k.base.dk + grad_floor_of(dt) * std::max(1.0, max_abs(k.gref.dk)))
        << "dk" << where << " (CPU flex_attention " << k.base.dk << ")";
    EXPECT_LE(e.dv, 2 * k.base.dv + grad_floor_of(dt) * std::max(1.0, max_abs(k.gref.dv)))
        << "dv" << where << " (CPU flex_attention " << k.base.dv << ")";
    std::cout << "[ errors ] " << GetParam().name << where << ": dq " << e.dq << " dk " << e.dk << " dv " << e.dv
              << " (CPU " << k.base.dq << " " << k.base.dk << " " << k.base.dv << "; max |dq| " << max_abs(k.gref.dq)
              << ")\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Mods, FlexGpu, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<FlexCase>& p) { return p.param.name; });

TEST(FlexGpuRefusals, SoftcapAndUnalignedBlocksAreRefusedWithReasons) {
  if (const std::string why = flex_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  Workload w = gpu_workload(gpu, shape(1, 64, 64, 2, 2, 64, ATTNRT_DTYPE_BF16));
  Flex f;
  f.mask_mod = "true";
  f.attach(w.desc);
  Backend& flex = *gpu.backend("flex_attention");
  ASSERT_EQ(flex.unsupported_reason(w.desc), "");
  w.desc.softcap = 5.0f;
  EXPECT_NE(flex.unsupported_reason(w.desc).find("softcap"), std::string::npos) << flex.unsupported_reason(w.desc);
  w.desc.softcap = 0.0f;
  test::set_block_mask(f, 64, 64, 32, 32, [](int, int) { return 2; });
  HostTensor* mask[] = {&f.kv_num_blocks, &f.kv_indices, &f.full_kv_num_blocks, &f.full_kv_indices};
  std::vector<DeviceTensor> on_gpu;
  for (HostTensor* t : mask) on_gpu.emplace_back(*t, w.desc.device);
  f.attach(w.desc);
  f.block.kv_num_blocks = on_gpu[0].dl();
  f.block.kv_indices = on_gpu[1].dl();
  f.block.full_kv_num_blocks = on_gpu[2].dl();
  f.block.full_kv_indices = on_gpu[3].dl();
  EXPECT_NE(flex.unsupported_reason(w.desc).find("multiples of its 128 x 128 tiles"), std::string::npos)
      << flex.unsupported_reason(w.desc);
}

TEST(FlexGpuRefusals, BackwardWithoutScoreModGradOrDeterministicIsRefusedWithReasons) {
  if (const std::string why = flex_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  Workload w = gpu_workload(gpu, shape(1, 64, 64, 2, 2, 64, ATTNRT_DTYPE_BF16));
  Flex f;
  f.score_mod = "score * 0.5f";
  f.attach(w.desc);
  Backend& flex = *gpu.backend("flex_attention");
  ASSERT_EQ(flex.unsupported_reason(w.desc), "");
  DeviceWorkload dw(w, w.desc.device);
  flex.forward(w.desc, dw.forward_args(), 0);
  auto backward_error = [&] {
    try {
      flex.backward(w.desc, dw.backward_args(), 0);
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), ATTNRT_ERROR_UNSUPPORTED);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(backward_error().find("needs score_mod_grad"), std::string::npos) << backward_error();
  f.score_mod_grad = "0.5f";
  f.attach(w.desc);
  w.desc.deterministic = 1;
  EXPECT_NE(backward_error().find("deterministic"), std::string::npos) << backward_error();
}

// ---------------------------------------------------------------- create_block_mask (ABI 1.4)

// The eight outputs on the host (filled with -7, so nothing unwritten passes) and on the device.
struct MaskOutputs {
  std::vector<HostTensor> host;  // kv_num, kv_idx, full_kv_num, full_kv_idx, q_num, q_idx, full_q_num, full_q_idx
  std::vector<DeviceTensor> device;
  MaskOutputs(int64_t bm, int64_t hm, int64_t mq, int64_t mk, DLDevice where) {
    for (int p = 0; p < 4; ++p) {
      const int64_t rows = p < 2 ? mq : mk, cols = p < 2 ? mk : mq;
      host.push_back(test::i32({bm, hm, rows}));
      host.push_back(test::i32({bm, hm, rows, cols}));
    }
    for (HostTensor& t : host) {
      t.fill(-7);
      if (where.device_type == kDLCUDA) device.emplace_back(t, where);
    }
  }
  attnrt_block_mask_args args() {
    attnrt_block_mask_args a{};
    a.struct_size = sizeof a;
    DLTensor* t[8];
    for (int i = 0; i < 8; ++i) t[i] = device.empty() ? host[size_t(i)].dl() : device[size_t(i)].dl();
    a.kv_num_blocks = t[0];
    a.kv_indices = t[1];
    a.full_kv_num_blocks = t[2];
    a.full_kv_indices = t[3];
    a.q_num_blocks = t[4];
    a.q_indices = t[5];
    a.full_q_num_blocks = t[6];
    a.full_q_indices = t[7];
    return a;
  }
};

// The CUDA plugin's lists equal the CPU plugin's entry for entry (the CPU side is checked against
// a classification of every pair in attnrt_flex_tests), per head and broadcast, odd lengths and
// block sizes, one mask_mod per family; then one large broadcast causal mask, timed.
TEST(FlexGpuBlockMask, CreateBlockMaskEqualsTheCpuPlugins) {
  if (const std::string why = flex_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  Backend& flex = *gpu.backend("flex_attention");
  Backend cpu(gpu.registry->load(*gpu.registry->find("flex_attention", "cpu")));
  ASSERT_TRUE(flex.has_create_block_mask());
  struct Mod {
    const char* name;
    const char* mask_mod;
    bool doc_aux;
  };
  const Mod mods[] = {{"causal", "q_idx >= kv_idx", false},
                      {"sliding_window_per_head", "kv_idx <= q_idx && q_idx - kv_idx < 100 + 150 * h", false},
                      {"document", "aux0(b, q_idx) == aux0(b, kv_idx)", true},
                      {"prefix_lm", "kv_idx < (int)scalar0 || q_idx >= kv_idx", false},
                      {"nothing_visible", "false", false},
                      {"no_mask_mod", "", false}};
  struct Geometry {
    int sq, sk, qb, kb, bm, hm;
  };
  const Geometry geometries[] = {
      {1000, 1537, 128, 128, 2, 4}, {333, 517, 64, 32, 1, 1}, {2048, 2048, 128, 128, 2, 1}, {77, 3000, 256, 64, 1, 4}};
  for (const Geometry& g : geometries) {
    for (const Mod& mod : mods) {
      SCOPED_TRACE(::testing::Message() << mod.name << " S " << g.sq << "x" << g.sk << " blocks " << g.qb << "x" << g.kb
                                        << " [" << g.bm << ", " << g.hm << "]");
      Workload w = gpu_workload(gpu, shape(2, g.sq, g.sk, 4, 2, 128, ATTNRT_DTYPE_BF16));
      Flex f;
      f.mask_mod = mod.mask_mod;
      f.scalars = {300.0f};
      if (mod.doc_aux) {
        HostTensor doc = test::i32({2, std::max(g.sq, g.sk)});
        for (int b = 0; b < 2; ++b) {
          for (int j = 0; j < std::max(g.sq, g.sk); ++j) doc.set(b * std::max(g.sq, g.sk) + j, j / (173 + 211 * b));
        }
        f.aux.push_back(doc);
      }
      std::vector<DeviceTensor> aux;
      for (HostTensor& t : f.aux) aux.emplace_back(t, w.desc.device);
      Workload host = w;
      host.desc.device = DLDevice{kDLCPU, 0};
      host.desc.cuda_arch = 0;
      f.attach(host.desc);
      f.block.q_block_size = g.qb;
      f.block.kv_block_size = g.kb;
      const int64_t mq = (g.sq + g.qb - 1) / g.qb, mk = (g.sk + g.kb - 1) / g.kb;
      MaskOutputs want(g.bm, g.hm, mq, mk, host.desc.device);
      attnrt_block_mask_args ha = want.args();
      cpu.create_block_mask(host.desc, ha, attnrt_exec{sizeof(attnrt_exec), nullptr, nullptr, 0, 0});
      attnrt_flex_attention device_block = f.block;
      std::vector<const DLTensor*> aux_ptrs;
      for (DeviceTensor& t : aux) aux_ptrs.push_back(t.dl());
      device_block.aux = aux_ptrs.data();
      w.desc.extensions = &device_block.header;
      MaskOutputs got(g.bm, g.hm, mq, mk, w.desc.device);
      attnrt_block_mask_args da = got.args();
      flex.create_block_mask(w.desc, da, attnrt_exec{sizeof(attnrt_exec), nullptr, nullptr, 0, 0});
      for (size_t t = 0; t < 8; ++t) {
        got.device[t].download(got.host[t]);
        const int64_t n = got.host[t].numel();
        for (int64_t e = 0; e < n; ++e) {
          ASSERT_EQ(got.host[t].get(e), want.host[t].get(e)) << "output " << t << " element " << e;
        }
      }
    }
  }

  // S 32768, 128 x 128 blocks, broadcast causal: 65536 blocks of 16384 pairs.
  Workload w = gpu_workload(gpu, shape(1, 32768, 32768, 2, 2, 128, ATTNRT_DTYPE_BF16));
  Flex f;
  f.mask_mod = "q_idx >= kv_idx";
  f.attach(w.desc);
  f.block.q_block_size = f.block.kv_block_size = 128;
  MaskOutputs big(1, 1, 256, 256, w.desc.device);
  attnrt_block_mask_args a = big.args();
  const attnrt_exec exec{sizeof(attnrt_exec), nullptr, nullptr, 0, 0};
  flex.create_block_mask(w.desc, a, exec);  // compiles (or loads) the module
  cuda_synchronize(w.desc.device);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) flex.create_block_mask(w.desc, a, exec);
  cuda_synchronize(w.desc.device);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / 5;
  big.device[0].download(big.host[0]);
  big.device[2].download(big.host[2]);
  for (int m = 0; m < 256; ++m) {
    ASSERT_EQ(big.host[0].get(m), 1) << "the diagonal block is the only partial one, row " << m;
    ASSERT_EQ(big.host[2].get(m), m) << "blocks left of the diagonal are full, row " << m;
  }
  std::cout << "[ timing ] create_block_mask S32768 causal 128x128 broadcast: " << ms << " ms a call\n";
}

// A tensor's elements as doubles.
std::vector<double> values(const HostTensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t e = 0; e < t.numel(); ++e) v[static_cast<size_t>(e)] = t.get(e);
  return v;
}

// f's block-mask lists on d's device, with f's block (attached to d) pointing at them.
struct DeviceBlockMask {
  std::vector<DeviceTensor> lists;  // kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices
  DeviceBlockMask(Flex& f, attnrt_attention_desc& d) {
    for (HostTensor* t : {&f.kv_num_blocks, &f.kv_indices, &f.full_kv_num_blocks, &f.full_kv_indices}) {
      lists.emplace_back(*t, d.device);
    }
    f.attach(d);
    f.block.kv_num_blocks = lists[0].dl();
    f.block.kv_indices = lists[1].dl();
    f.block.full_kv_num_blocks = lists[2].dl();
    f.block.full_kv_indices = lists[3].dl();
  }
};

// flex's forward on flash_attention_2's kernel (ATTNRT_FLEX_FORWARD=flash_attention_2: a CTA a
// tile, no ring, no choice of height), the reference the Hopper forward is held to below.
ReferenceForward flash_attention_2_forward(Backend& flex, Workload& w) {
  ScopedEnv path("ATTNRT_FLEX_FORWARD", "flash_attention_2");
  DeviceWorkload dw(w, w.desc.device);
  attnrt_forward_args fa = dw.forward_args();
  dw.poison_forward_outputs();
  flex.forward(w.desc, fa, 0);
  dw.download_forward_outputs();
  ReferenceForward ref;
  ref.out = values(w.out);
  ref.lse = values(w.lse);
  return ref;
}

// The Hopper forward at each tile height (128, 192, and the GPU's choice) against
// flash_attention_2's kernel under the same mods and block mask: within two bf16 steps of the
// largest output (the two kernels' summation orders differ), the LSE within 1e-3.
void expect_each_height_answers_as_flash_attention_2(Backend& flex, Workload& w, const std::string& what) {
  const ReferenceForward fa2 = flash_attention_2_forward(flex, w);
  const double bound = 2 * std::ldexp(1.0, -7) * std::max(1.0, max_abs(fa2.out));
  for (const char* rows : {"128", "192", "auto"}) {
    ScopedEnv path("ATTNRT_FLEX_FORWARD", "hopper");
    ScopedEnv height("ATTNRT_FLEX_ROWS", rows);
    const Errors e = run_forward(flex, w, fa2);
    EXPECT_LE(e.out, bound) << what << " rows " << rows << ": out";
    EXPECT_LE(e.lse, 1e-3) << what << " rows " << rows << ": lse";
    std::cout << "[ errors ] " << what << " rows " << rows << ": out " << e.out << " lse " << e.lse
              << " (against flash_attention_2's kernel)\n";
  }
}

// The Hopper forward's persistent CTAs take block-sparse tiles through a ring of three slots
// (fa3_forward.cuh: a scheduling warp publishes, one thread loads, the consumers compute), which
// turns over only when a CTA takes more than two tiles: the cases above give it 192 tiles at most
// for the H100's 132 CTAs. Here 2 sequences x 32 heads x 1024 rows are 512 tiles of 128 rows (384
// of 192), at each tile height and under the per-call choice, against flash_attention_2's kernel
// under the same mods and block mask (a CTA a tile, no ring; the cases above hold it to the fp64
// reference). A tile that read another slot's walk or Q would be off by the size of the outputs,
// far past the bound (two bf16 steps of the largest output, for the two kernels' summation order).
TEST(FlexGpuBlockMask, HopperForwardWithManyTilesPerCtaEqualsFlashAttention2sKernel) {
  if (const std::string why = flex_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  if (gpu.device.cuda_arch != 90) GTEST_SKIP() << "the Hopper forward runs on sm_90";
  constexpr int kSeq = 1024, kBlocks = kSeq / 128;
  std::mt19937 rng(5);
  std::vector<int> sparse(kBlocks * kBlocks);
  for (int& st : sparse) st = static_cast<int>(rng() % 3);
  for (int m = 0; m < kBlocks; ++m) sparse[m * kBlocks] = 2;  // every row sees some key
  struct Mod {
    const char* name;
    const char* mask_mod;
    std::function<int(int, int)> state;  // of block (m, n): 0 skipped, 1 partial, 2 full
  };
  // The window's block states from its rule, element by element.
  auto window = [](int m, int n) {
    int seen = 0;
    for (int i = 128 * m; i < 128 * m + 128; ++i) {
      for (int j = 128 * n; j < 128 * n + 128; ++j) seen += i >= j && i - j < 256;
    }
    return seen == 0 ? 0 : seen == 128 * 128 ? 2 : 1;
  };
  const Mod mods[] = {{"sliding_window_256", "q_idx >= kv_idx && q_idx - kv_idx < 256", window},
                      {"random_block_sparse", "((q_idx + kv_idx) % 3) != 0",
                       [&sparse](int m, int n) { return sparse[m * kBlocks + n]; }}};
  Backend& flex = *gpu.backend("flex_attention");
  for (int hd : {64, 128}) {
    for (const Mod& mod : mods) {
      WorkloadSpec spec = shape(2, kSeq, kSeq, 32, 8, hd, ATTNRT_DTYPE_BF16);
      spec.seed = 29 + hd;
      Workload w = gpu_workload(gpu, spec);
      Flex f;
      test::set_block_mask(f, kSeq, kSeq, 128, 128, mod.state);
      f.mask_mod = mod.mask_mod;
      DeviceBlockMask mask(f, w.desc);
      ASSERT_EQ(flex.unsupported_reason(w.desc), "") << mod.name;
      expect_each_height_answers_as_flash_attention_2(
          flex, w, std::string("many tiles ") + mod.name + " hd" + std::to_string(hd));
    }
  }
}

// Block-mask lists written by hand, as a user may: per head (Hm = heads) and broadcast over the
// batch (Bm = 1), in no order, with duplicates, blocks in both lists, entries past the keys or
// negative within a row's count, a count over the list's width and a negative one. Each output is
// held to the fp64 reference of what the lists mean by the contract (flex_params.h's List,
// sdk/README.md), worked out here from the lists themselves: a row's count clamped to [0, width],
// entries outside the keys ignored, a block in both lists full, partial blocks under mask_mod,
// blocks listed nowhere skipped. Both forwards read the lists through attnrt_flex_block_states'
// states, so flash_attention_2's kernel is held to the reference too, beside the Hopper forward
// at each tile height. Geometries: 128 and 256 rows or keys a block; rows listing more than 32
// blocks (the state kernel's lanes take 32 entries at a time); no full list (every listed block
// partial).
TEST(FlexGpuBlockMask, HandWrittenListsMeanWhatTheContractSays) {
  if (const std::string why = flex_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  if (gpu.device.cuda_arch != 90) GTEST_SKIP() << "the Hopper forward runs on sm_90";
  constexpr int kHeads = 4;
  Backend& flex = *gpu.backend("flex_attention");
  struct Geometry {
    int sq, sk, qb, kb;
    bool with_full;
  };
  const Geometry geometries[] = {{1000, 1000, 128, 128, true},
                                 {1000, 1000, 256, 128, true},
                                 {1000, 1000, 128, 256, true},
                                 {300, 5000, 128, 128, true},  // 40 key blocks: rows listing over 32
                                 {1000, 1000, 128, 128, false}};
  for (const Geometry& g : geometries) {
    const int mq = (g.sq + g.qb - 1) / g.qb, mk = (g.sk + g.kb - 1) / g.kb;
    const std::string what = std::to_string(g.sq) + "x" + std::to_string(g.sk) + " in " + std::to_string(g.qb) + "x" +
                             std::to_string(g.kb) + " blocks" + (g.with_full ? "" : ", no full list");
    Flex f;
    f.q_block = g.qb;
    f.kv_block = g.kb;
    f.kv_num_blocks = test::i32({1, kHeads, mq});
    f.kv_indices = test::i32({1, kHeads, mq, mk});
    f.kv_indices.fill(-7);
    if (g.with_full) {
      f.full_kv_num_blocks = test::i32({1, kHeads, mq});
      f.full_kv_indices = test::i32({1, kHeads, mq, mk});
      f.full_kv_indices.fill(-7);
    }
    std::mt19937 rng(static_cast<unsigned>(g.sk * 7 + g.qb + g.kb + g.with_full));
    for (int h = 0; h < kHeads; ++h) {
      for (int m = 0; m < mq; ++m) {
        const int64_t row = int64_t(h) * mq + m;
        int partial = 0, full = 0;
        // Every row sees a key: its first block listed (full, or partial under mask_mod, which
        // leaves two pairs in three visible).
        if (g.with_full) {
          f.full_kv_indices.set(row * mk + full++, 0);
        } else {
          f.kv_indices.set(row * mk + partial++, 0);
        }
        for (int e = 1; e < mk; ++e) {
          const int n = static_cast<int>(rng() % static_cast<unsigned>(mk));
          const unsigned pick = rng() % 8;
          if (pick < 4) f.kv_indices.set(row * mk + partial++, n);                         // duplicates too
          if (pick == 4 && g.with_full) f.full_kv_indices.set(row * mk + full++, n);       // (maybe partial too)
          if (pick == 5) f.kv_indices.set(row * mk + partial++, rng() % 2 ? mk + 3 : -1);  // outside the keys
        }
        if (h == 1 && m == 1) partial = mk + 5;                  // over the width: clamped (entries past `partial`: -7)
        if (h == 2 && m == mq - 1) partial = -3;                 // none (the row still sees its full block, if any)
        if (!g.with_full && h == 2 && m == mq - 1) partial = 1;  // (without a full list: its first block)
        f.kv_num_blocks.set(row, partial);
        if (g.with_full) f.full_kv_num_blocks.set(row, full);
      }
    }
    f.mask_mod = "((q_idx + kv_idx) % 3) != 0";
    // The lists' meaning, per (head, query block, key block): 0 skipped, 1 partial, 2 full.
    std::vector<int> state(size_t(kHeads) * mq * mk, 0);
    auto apply = [&](const HostTensor& num, const HostTensor& idx, int value) {
      for (int64_t row = 0; row < int64_t(kHeads) * mq; ++row) {
        const int count = std::clamp(static_cast<int>(num.get(row)), 0, mk);
        for (int e = 0; e < count; ++e) {
          const int n = static_cast<int>(idx.get(row * mk + e));
          if (n >= 0 && n < mk) state[size_t(row * mk + n)] = value;
        }
      }
    };
    apply(f.kv_num_blocks, f.kv_indices, 1);
    if (g.with_full) apply(f.full_kv_num_blocks, f.full_kv_indices, 2);  // after: a block in both is full
    f.ref.visible = [state, mq, mk, g](int64_t, int64_t h, int64_t i, int64_t j) {
      const int st = state[size_t((h * mq + i / g.qb) * mk + j / g.kb)];
      return st == 2 || (st == 1 && (i + j) % 3 != 0);
    };
    for (int hd : {64, 128}) {
      WorkloadSpec spec = shape(2, g.sq, g.sk, kHeads, 2, hd, ATTNRT_DTYPE_BF16);
      spec.seed = 53 + hd + g.qb + g.kb + g.sk;
      Workload w = gpu_workload(gpu, spec);
      Workload host = w;
      host.desc.device = DLDevice{kDLCPU, 0};
      host.desc.cuda_arch = 0;
      const ReferenceForward ref = reference_forward(host.desc, host.forward_args(), &f.ref);
      std::vector<DeviceTensor> lists;
      for (HostTensor* t : {&f.kv_num_blocks, &f.kv_indices, &f.full_kv_num_blocks, &f.full_kv_indices}) {
        lists.push_back(t->empty() ? DeviceTensor() : DeviceTensor(*t, w.desc.device));
      }
      f.attach(w.desc);
      f.block.kv_num_blocks = lists[0].dl();
      f.block.kv_indices = lists[1].dl();
      f.block.full_kv_num_blocks = g.with_full ? lists[2].dl() : nullptr;
      f.block.full_kv_indices = g.with_full ? lists[3].dl() : nullptr;
      ASSERT_EQ(flex.unsupported_reason(w.desc), "") << what;
      // bf16 outputs against fp64: a few of the output's rounding steps; a block read as another
      // state moves whole rows by far more.
      const double bound = std::ldexp(1.0, -6) * std::max(1.0, max_abs(ref.out));
      std::vector<std::pair<const char*, const char*>> runs = {{"flash_attention_2", nullptr}, {"hopper", "128"}};
      if (hd == 64) runs.insert(runs.end(), {{"hopper", "192"}, {"hopper", "auto"}});
      for (const auto& [forward, rows] : runs) {
        ScopedEnv path("ATTNRT_FLEX_FORWARD", forward);
        ScopedEnv height("ATTNRT_FLEX_ROWS", rows);
        const Errors e = run_forward(flex, w, ref);
        const std::string run =
            what + " hd" + std::to_string(hd) + " " + forward + (rows ? std::string(" rows ") + rows : "");
        EXPECT_LE(e.out, bound) << run << ": out";
        EXPECT_LE(e.lse, 1e-2) << run << ": lse";
        std::cout << "[ errors ] hand-written lists " << run << ": out " << e.out << " lse " << e.lse
                  << " (against the fp64 reference)\n";
      }
    }
  }
}

// At head_dim 64 the GPU chooses the forward's tile height for a block mask
// (both kernels launched, the cheaper one runs), and the plugin remembers the choice per block mask
// once its sums have come back (rows_choice.hpp), launching that kernel alone. Later calls with the
// same block mask must answer bit for bit as the first (the same kernel: the host's rule is the
// GPU's), and a block mask rewritten in place, whose remembered height is now the other one's
// choice, must still answer right (the choice is speed only), each against flash_attention_2's
// kernel under the same mods (bound as in the test above).
TEST(FlexGpuBlockMask, TheRememberedTileHeightAnswersAsTheChoiceDid) {
  if (const std::string why = flex_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  Gpu& gpu = Gpu::get();
  if (gpu.device.cuda_arch != 90) GTEST_SKIP() << "the Hopper forward runs on sm_90";
  constexpr int kSeq = 4096, kBlocks = kSeq / 128;
  // The 256-key window takes 192 rows, a random 10% of blocks 128 (rows_chosen's model).
  auto window = [](int m, int n) { return n == m || n == m - 2 ? 1 : n == m - 1 ? 2 : 0; };
  std::mt19937 rng(11);
  std::vector<int> sparse(kBlocks * kBlocks, 0);
  for (int m = 0; m < kBlocks; ++m) {
    sparse[m * kBlocks] = 2;
    for (int k = 0; k < kBlocks / 10; ++k) sparse[m * kBlocks + static_cast<int>(rng() % kBlocks)] = 1;
  }
  Backend& flex = *gpu.backend("flex_attention");
  ScopedEnv height("ATTNRT_FLEX_ROWS", nullptr);  // the plugin's own rule: the choice
  ScopedEnv path("ATTNRT_FLEX_FORWARD", nullptr);
  WorkloadSpec spec = shape(1, kSeq, kSeq, 8, 8, 64, ATTNRT_DTYPE_BF16);
  spec.seed = 41;
  Workload w = gpu_workload(gpu, spec);
  Flex f;
  test::set_block_mask(f, kSeq, kSeq, 128, 128, window);
  f.mask_mod = "q_idx >= kv_idx && q_idx - kv_idx < 256";
  DeviceBlockMask mask(f, w.desc);
  ASSERT_EQ(flex.unsupported_reason(w.desc), "");
  ReferenceForward ref = flash_attention_2_forward(flex, w);
  const double bound = 2 * std::ldexp(1.0, -7) * std::max(1.0, max_abs(ref.out));
  std::vector<double> first;
  for (int call = 0; call < 4; ++call) {
    const Errors e = run_forward(flex, w, ref);  // (downloads its outputs: the sums are back after it)
    EXPECT_LE(e.out, bound) << "window, call " << call;
    EXPECT_LE(e.lse, 1e-3) << "window, call " << call;
    const std::vector<double> out = values(w.out);
    if (call == 0) first = out;
    size_t differ = 0;
    for (size_t i = 0; i < out.size(); ++i) differ += out[i] != first[i];
    EXPECT_EQ(differ, 0u) << "window, call " << call << ": outputs unlike the first call's";
  }
  // The same tensors, rewritten with the sparse mask's lists (under the same mask_mod: every row
  // sees its full first block).
  Flex g;
  test::set_block_mask(g, kSeq, kSeq, 128, 128, [&sparse](int m, int n) { return sparse[m * kBlocks + n]; });
  mask.lists[0].upload(g.kv_num_blocks);
  mask.lists[1].upload(g.kv_indices);
  mask.lists[2].upload(g.full_kv_num_blocks);
  mask.lists[3].upload(g.full_kv_indices);
  ref = flash_attention_2_forward(flex, w);
  for (int call = 0; call < 2; ++call) {
    const Errors e = run_forward(flex, w, ref);
    EXPECT_LE(e.out, bound) << "rewritten in place, call " << call;
    EXPECT_LE(e.lse, 1e-3) << "rewritten in place, call " << call;
    std::cout << "[ errors ] remembered tile height, rewritten mask, call " << call << ": out " << e.out << " lse "
              << e.lse << "\n";
  }
}

}  // namespace
}  // namespace attnrt::gpu_test
