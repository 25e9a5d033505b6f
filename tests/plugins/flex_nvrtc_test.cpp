// The mods' translation unit for the CUDA path compiles under NVRTC (no GPU needed): the same
// prelude and wrapping as the CPU path's, so a mod means the same thing on both. Compile errors
// come back with the mod's name and line.
#include <attnrt/status.hpp>
#include <attnrt_kernels/flex/mods.hpp>
#include <attnrt_kernels/flex/nvrtc.hpp>

#include <gtest/gtest.h>

#include <chrono>

namespace attnrt {
namespace {

using kernels::flex::Mods;

// A kernel that calls every mod, as a flex mainloop will.
constexpr const char* kProbeKernel = R"(
extern "C" __global__ void probe(attnrt_flex::Context ctx, float* out) {
  const int i = threadIdx.x;
  out[i] = attnrt_flex_user::mask_mod(ctx, 0, 1, i, 3) ? attnrt_flex_user::score_mod(ctx, 0.5f, 0, 1, i, 3) : -1.0f;
  out[32 + i] = attnrt_flex_user::score_mod_grad(ctx, 0.5f, 0, 1, i, 3);
}
)";

Mods typical() {
  Mods m;
  m.score_mod = "score + aux0(h, q_idx - kv_idx + 7) * scalar0";
  m.score_mod_grad = "1.0f";
  m.mask_mod = "const int doc = aux1(q_idx);\nreturn doc == aux1(kv_idx) && q_idx >= kv_idx;";
  m.aux = {{"float", 2}, {"int", 1}};
  m.num_scalars = 1;
  return m;
}

TEST(FlexNvrtc, TheModsCompileForSm80AndSm90a) {
  for (int arch : {80, 90}) {
    const auto start = std::chrono::steady_clock::now();
    const auto out = kernels::flex::nvrtc_compile(
        kernels::flex::translation_unit(typical(), kernels::flex::Target::kCuda) + kProbeKernel, "probe.cu", arch);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GT(out.cubin.size(), 1000u) << "sm_" << arch;
    EXPECT_EQ(out.cubin.substr(1, 3), "ELF") << "a cubin is an ELF image";
    std::printf("NVRTC %s, sm_%d: %.3f s for the probe\n", kernels::flex::nvrtc_version().c_str(), arch, seconds);
  }
}

TEST(FlexNvrtc, ACompileErrorNamesTheModAndLine) {
  Mods m;
  m.mask_mod = "int x = q_idx;\nreturn x >= undefined_name;";
  try {
    kernels::flex::nvrtc_compile(kernels::flex::translation_unit(m, kernels::flex::Target::kCuda) + kProbeKernel,
                                 "probe.cu", 80);
    FAIL() << "compiled";
  } catch (const sdk::Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.status(), ATTNRT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(what.find("mask_mod(2)"), std::string::npos) << what;
    EXPECT_NE(what.find("undefined_name"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace attnrt
