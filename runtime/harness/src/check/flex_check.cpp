// flex: the flex_attention extension block of ABI 1.3, called straight through the C table on
// small CPU workloads and compared with the fp64 reference given the same rules as C++ lambdas.
#include "flex_check.hpp"

#include "fixtures.hpp"
#include "isolation.hpp"

#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/harness/reference.hpp>
#include <attnrt/runtime/backend.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace attnrt::check {
namespace {

double tolerance(attnrt_dtype dt) { return dt == ATTNRT_DTYPE_FP32 ? 1e-4 : dt == ATTNRT_DTYPE_FP16 ? 8e-3 : 6e-2; }

attnrt_flex_attention empty_block() {
  attnrt_flex_attention f{};
  f.header = {sizeof f, ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION, 0, nullptr};
  f.source_name = "attnrt check";
  return f;
}

// Largest error of `t` against `ref`, relative to max(1, max |ref|).
double relative_error(const HostTensor& t, const std::vector<double>& ref) {
  return max_abs_error(*t.dl(), ref) / std::max(1.0, max_abs(ref));
}

}  // namespace

std::string check_flex(const std::filesystem::path& lib) {
  RawPlugin raw(lib);
  const attnrt_plugin_api& api = raw.api();
  if (api.abi_minor < 3) {
    throw CheckSkipped(fmt::format("built against ABI {}.{}: the flex_attention block (ABI 1.3) is never sent to it",
                                   api.abi_major, api.abi_minor));
  }
  const attnrt_capabilities& caps = raw.lib->capabilities();
  if (!(caps.devices & ATTNRT_DEVICE_BIT_CPU)) throw CheckSkipped("CPU tensors only: the plugin is not a CPU plugin");
  const attnrt_dtype dt = first_dtype(caps);
  WorkloadSpec spec = base_spec(caps, dt);
  spec.seqlen_q = 24;
  spec.seqlen_k = 32;
  spec.causal = false;
  Workload w = cpu_workload(spec, caps);
  const bool backward = api.backward != nullptr && (caps.features & ATTNRT_FEATURE_BACKWARD);

  attnrt_flex_attention flex = empty_block();
  flex.mask_mod = "(q_idx + kv_idx) % 3 != 0";
  w.desc.extensions = &flex.header;
  if (!(caps.features & ATTNRT_FEATURE_FLEX_ATTENTION)) {
    report_case("a plugin without FLEX_ATTENTION refuses the block");
    const std::string why = raw.unsupported(w.desc);
    if (why.empty())
      throw CheckFailed("does not advertise FLEX_ATTENTION but accepts a call with a flex_attention block");
    throw CheckSkipped("does not advertise ATTNRT_FEATURE_FLEX_ATTENTION (and refuses the block: '" + why + "')");
  }

  std::vector<std::string> done;
  auto run = [&](const char* name, const ReferenceMods& mods, bool with_backward) {
    report_case(name);
    if (std::string why = raw.unsupported(w.desc); !why.empty()) {
      throw CheckFailed(fmt::format("{}: refused: {}", name, why));
    }
    attnrt_forward_args fa = w.forward_args();
    const ReferenceForward ref = reference_forward(w.desc, fa, &mods);
    w.out.fill_nan();
    std::vector<char> ws;
    sdk::MessageBuffer err;
    if (raw.forward(w.desc, fa, ws, err) != ATTNRT_OK)
      throw CheckFailed(fmt::format("{}: forward failed: {}", name, err.text()));
    const double e = relative_error(w.out, ref.out), tol = tolerance(dt);
    if (!(e <= tol))
      throw CheckFailed(fmt::format("{}: out differs from the reference by {:.3g} (> {:.3g})", name, e, tol));
    if (with_backward && backward) {
      const ReferenceBackward g = reference_backward(w.desc, fa, *w.dout.dl(), &mods);
      if (!w.lse.empty()) {
        if (raw.forward(w.desc, fa, ws, err) != ATTNRT_OK) throw CheckFailed(std::string(name) + ": " + err.text());
      }
      w.dq.fill_nan();
      if (raw.backward(w.desc, w.backward_args(), ws, err) != ATTNRT_OK) {
        throw CheckFailed(fmt::format("{}: backward failed: {}", name, err.text()));
      }
      for (const auto& [what, t, r] :
           {std::tuple{"dq", &w.dq, &g.dq}, std::tuple{"dk", &w.dk, &g.dk}, std::tuple{"dv", &w.dv, &g.dv}}) {
        const double ge = relative_error(*t, *r);
        if (!(ge <= tol)) throw CheckFailed(fmt::format("{}: {} differs from the reference by {:.3g}", name, what, ge));
      }
    }
    done.push_back(name);
  };

  ReferenceMods mask;
  mask.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return (i + j) % 3 != 0; };
  run("mask_mod", mask, true);

  // score * scalar0 + aux0(h): an aux tensor, a scalar, and the gradient scalar0.
  HostTensor bias({w.desc.heads_q}, DLDataType{kDLFloat, 32, 1});
  for (int h = 0; h < w.desc.heads_q; ++h) bias.set(h, 0.25 * h - 0.5);
  const DLTensor* aux[] = {bias.dl()};
  const float scalars[] = {0.75f};
  flex = empty_block();
  flex.score_mod = "score * scalar0 + aux0(h)";
  flex.score_mod_grad = "scalar0";
  flex.num_aux = 1;
  flex.aux = aux;
  flex.num_scalars = 1;
  flex.scalars = scalars;
  w.desc.extensions = &flex.header;
  ReferenceMods score;
  score.score = [&bias](double s, int64_t, int64_t h, int64_t, int64_t) { return s * 0.75 + bias.get(h); };
  score.grad = [](double, int64_t, int64_t, int64_t, int64_t) { return 0.75; };
  run("score_mod with aux0 and scalar0", score, true);

  // Blocks of 8 x 8 over 24 x 32: per query block m, key block m+1 skipped (its pairs would pass
  // mask_mod), key block m full (mask_mod, which hides everything, not evaluated), the rest
  // partial (mask_mod evaluated: nothing visible there).
  const int64_t mq = 3, mk = 4;
  HostTensor num({1, 1, mq}, DLDataType{kDLInt, 32, 1}), idx({1, 1, mq, mk}, DLDataType{kDLInt, 32, 1});
  HostTensor full_num({1, 1, mq}, DLDataType{kDLInt, 32, 1}), full_idx({1, 1, mq, mk}, DLDataType{kDLInt, 32, 1});
  idx.fill(0);
  full_idx.fill(0);
  for (int64_t m = 0; m < mq; ++m) {
    int64_t n_partial = 0;
    for (int64_t n = 0; n < mk; ++n) {
      if (n != m && n != m + 1) idx.set(m * mk + n_partial++, double(n));
    }
    num.set(m, double(n_partial));
    full_num.set(m, 1);
    full_idx.set(m * mk, double(m));
  }
  flex = empty_block();
  flex.mask_mod = "false";
  flex.q_block_size = flex.kv_block_size = 8;
  flex.kv_num_blocks = num.dl();
  flex.kv_indices = idx.dl();
  flex.full_kv_num_blocks = full_num.dl();
  flex.full_kv_indices = full_idx.dl();
  w.desc.extensions = &flex.header;
  ReferenceMods blocks;
  blocks.visible = [](int64_t, int64_t, int64_t i, int64_t j) { return i / 8 == j / 8; };
  run("block mask: skipped, full and partial blocks", blocks, false);
  return fmt::format("{} match the fp64 reference ({}{})", fmt::join(done, ", "), sdk::dtype_name(dt),
                     backward ? ", forward and backward" : ", forward");
}

}  // namespace attnrt::check
