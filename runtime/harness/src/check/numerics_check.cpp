// numerics/cpu/<dtype>: the base call and every advertised feature alone and together, forward
// (and LSE, and backward, when advertised) against the fp64 reference. Goes through Backend,
// the host's validated path, because the question here is the answer, not the argument checks.
#include "checks.hpp"
#include "fixtures.hpp"
#include "isolation.hpp"

#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/run_job.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

namespace attnrt::check {

std::string check_numerics(const std::filesystem::path& lib, attnrt_dtype dtype) {
  Backend backend(PluginLibrary::open(lib));
  const attnrt_capabilities& caps = backend.library().capabilities();
  const double tol = output_tolerance(dtype);
  std::vector<std::pair<std::string, WorkloadSpec>> cases = {{"base", base_spec(caps, dtype)}};
  WorkloadSpec all = base_spec(caps, dtype);
  std::vector<std::string> all_names;
  for (const Feature& f : features()) {
    if (!(caps.features & f.bit)) continue;
    WorkloadSpec s = base_spec(caps, dtype);
    f.enable(s);
    cases.emplace_back(f.name, s);
    if (f.bit == ATTNRT_FEATURE_PAGED_KV && (caps.features & ATTNRT_FEATURE_VARLEN)) continue;  // exclusive
    f.enable(all);
    all_names.push_back(f.name);
  }
  if (all_names.size() > 1) cases.emplace_back(fmt::format("{}", fmt::join(all_names, "+")), all);

  std::vector<std::string> failures, passed;
  for (auto& [name, spec] : cases) {
    spec.seed = std::hash<std::string>{}(name) + dtype;
    Workload w = cpu_workload(spec, caps);
    const std::string why = backend.unsupported_reason(w.desc);
    if (!why.empty()) {
      failures.push_back(fmt::format("{}: advertised but refused: {}", name, why));
      continue;
    }
    attnrt_forward_args fa = w.forward_args();
    const ReferenceForward ref = reference_forward(w.desc, fa);
    w.out.fill_nan();
    w.lse.fill_nan();
    try {
      backend.forward(w.desc, fa, 1);
    } catch (const Error& e) {
      failures.push_back(fmt::format("{}: accepted by its support query, then failed: {}", name, e.what()));
      continue;
    }
    const double e_out = max_abs_error(*w.out.dl(), ref.out), lim = tol * std::max(1.0, max_abs(ref.out));
    if (!(e_out <= lim))
      failures.push_back(fmt::format("{}: max |out - fp64 reference| = {:.3g} > {:.3g}", name, e_out, lim));
    if (caps.features & ATTNRT_FEATURE_LSE) {
      const double e_lse = max_abs_error(*w.lse.dl(), ref.lse);
      if (!(e_lse <= 1e-4))
        failures.push_back(fmt::format("{}: max |lse - fp64 reference| = {:.3g} > 1e-4", name, e_lse));
    }
    if (spec.backward && !spec.paged) {
      const ReferenceBackward g = reference_backward(w.desc, fa, *w.dout.dl());
      w.dq.fill_nan();
      w.dk.fill_nan();
      w.dv.fill_nan();
      if (w.desc.has_sinks) w.dsinks.fill_nan();
      attnrt_backward_args ba = w.backward_args();
      try {
        backend.backward(w.desc, ba, 1);
        const std::pair<const char*, std::pair<double, double>> grads[] = {
            {"dq", {max_abs_error(*w.dq.dl(), g.dq), max_abs(g.dq)}},
            {"dk", {max_abs_error(*w.dk.dl(), g.dk), max_abs(g.dk)}},
            {"dv", {max_abs_error(*w.dv.dl(), g.dv), max_abs(g.dv)}},
            {"dsinks", {w.desc.has_sinks ? max_abs_error(*w.dsinks.dl(), g.dsinks) : 0.0, max_abs(g.dsinks)}}};
        for (const auto& [gname, e] : grads) {
          const double glim = 2 * tol * std::max(1.0, e.second);
          if (!(e.first <= glim))
            failures.push_back(
                fmt::format("{}: max |{} - fp64 reference| = {:.3g} > {:.3g}", name, gname, e.first, glim));
        }
      } catch (const Error& e) {
        failures.push_back(fmt::format("{}: backward failed: {}", name, e.what()));
      }
    }
    passed.push_back(name);
  }
  if (!failures.empty()) throw CheckFailed(fmt::format("{}", fmt::join(failures, "; ")));
  return fmt::format("{} case(s) within {:.0e} of the fp64 reference: {}", passed.size(), tol, fmt::join(passed, ", "));
}

}  // namespace attnrt::check
