// numerics/cpu/<dtype>: the base call and every advertised feature alone and together, forward
// (and LSE, and backward, when advertised) against the fp64 reference, judged the way the GPU
// tests judge flash_attention_2 (tests/gpu/gpu_attention_test.cpp, FlashAttention's own rule):
// for every output, the plugin's error is at most twice the error of the runtime's eager plugin
// on the same inputs in the same dtype, plus a floor of a few fp32 rounding steps. A fixed
// tolerance per dtype would have to allow for the dtype's worst case, so a bf16 kernel off by a
// constant 1e-2 would pass it; eager's error on the very same numbers does not leave that room.
// And the mean signed error must stay near zero: rounding errors average out, a bias does not.
//
// When an advertised feature's case fails and the output matches the reference computed without
// that feature, the plugin is told so: "advertised but ignored". Every call's outputs sit between
// guard bands and its inputs are compared with copies (guards.hpp): a write outside an output or
// into an input fails the case, whatever the numbers. Goes through Backend, the host's
// validated path, because the question here is the answer, not the argument checks.
#include "checks.hpp"
#include "fixtures.hpp"
#include "guards.hpp"
#include "isolation.hpp"

#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/run_job.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace attnrt::check {
namespace {

// The floor under the 2x rule, in fp32 rounding steps of the output's magnitude: eager and a
// correct plugin accumulate in fp32 in different orders, and an error of exactly zero (an
// output eager gets bit-exact) must not demand exactness of the other.
constexpr double kFloorFp32Steps = 8;
// A bias is a mean signed error above this fraction of the max-error limit (plus twice eager's
// own mean): over the thousands of elements of a case, rounding errors average to far less.
constexpr double kBiasFraction = 0.1;
// Failures listed in the detail before "and N more".
constexpr size_t kMaxListed = 6;

// One output's error against the reference: the largest |x - ref|, the mean of x - ref, and the
// reference's magnitude. NaN max when x holds a NaN or misses a non-finite reference value
// (LSE is -inf for a row that sees no key).
struct Measured {
  double max = 0;
  double mean = 0;
  double scale = 0;
};

Measured measure(const HostTensor& x, const std::vector<double>& ref) {
  Measured m;
  bool bad = false;
  double sum = 0;
  int64_t n = 0;
  const int64_t count = std::min<int64_t>(x.numel(), static_cast<int64_t>(ref.size()));
  for (int64_t i = 0; i < count; ++i) {
    const double got = x.get(i), want = ref[i];
    if (!std::isfinite(want)) {
      bad = bad || got != want;
      continue;
    }
    const double d = got - want;
    bad = bad || std::isnan(d);
    m.max = std::max(m.max, std::abs(d));
    m.scale = std::max(m.scale, std::abs(want));
    sum += d;
    ++n;
  }
  if (bad || x.numel() != static_cast<int64_t>(ref.size())) m.max = std::numeric_limits<double>::quiet_NaN();
  m.mean = n ? sum / static_cast<double>(n) : 0.0;
  return m;
}

struct Output {
  const char* name;
  Measured got;
};

// Runs `backend` on w (outputs poisoned with NaN before each call, and guarded: guards.hpp) and
// measures what it wrote; `what` ("causal: ") prefixes the reported case. A write outside an
// output or into an input is added to *damage. Throws attnrt::Error from the call.
std::vector<Output> run_and_measure(Backend& backend, Workload& w, const ReferenceForward& ref,
                                    const ReferenceBackward* gref, bool lse, const std::string& what,
                                    std::vector<std::string>* damage) {
  auto note = [&](const std::string& phase, const std::string& d) {
    if (!d.empty()) damage->push_back(fmt::format("{}{}", phase, d));
  };
  attnrt_forward_args fa = w.forward_args();
  w.out.fill_nan();
  w.lse.fill_nan();
  {
    UnchangedInputs inputs;
    inputs.add(w.q, "q");
    inputs.add(w.k, "k");
    inputs.add(w.v, "v");
    GuardedOutput out(w.out, "out");
    std::optional<GuardedOutput> lse_out;
    fa.out = out.dl();
    if (fa.lse) fa.lse = lse_out.emplace(w.lse, "lse").dl();
    report_case(what + "forward");
    backend.forward(w.desc, fa, 1);
    note("forward ", out.finish());
    if (lse_out) note("forward ", lse_out->finish());
    for (const std::string& c : inputs.changed()) note("forward ", c);
  }
  std::vector<Output> outputs = {{"out", measure(w.out, ref.out)}};
  if (lse) outputs.push_back({"lse", measure(w.lse, ref.lse)});
  if (gref) {
    w.dq.fill_nan();
    w.dk.fill_nan();
    w.dv.fill_nan();
    if (w.desc.has_sinks) w.dsinks.fill_nan();
    attnrt_backward_args ba = w.backward_args();
    UnchangedInputs inputs;
    for (auto [t, name] : {std::pair<HostTensor*, const char*>{&w.q, "q"},
                           {&w.k, "k"},
                           {&w.v, "v"},
                           {&w.dout, "dout"},
                           {&w.out, "out"},
                           {&w.lse, "lse"}})
      inputs.add(*t, name);
    GuardedOutput dq(w.dq, "dq"), dk(w.dk, "dk"), dv(w.dv, "dv");
    std::optional<GuardedOutput> dsinks;
    ba.dq = dq.dl();
    ba.dk = dk.dl();
    ba.dv = dv.dl();
    if (ba.dsinks) ba.dsinks = dsinks.emplace(w.dsinks, "dsinks").dl();
    report_case(what + "backward");
    backend.backward(w.desc, ba, 1);
    for (GuardedOutput* g : {&dq, &dk, &dv}) note("backward ", g->finish());
    if (dsinks) note("backward ", dsinks->finish());
    for (const std::string& c : inputs.changed()) note("backward ", c);
    outputs.push_back({"dq", measure(w.dq, gref->dq)});
    outputs.push_back({"dk", measure(w.dk, gref->dk)});
    outputs.push_back({"dv", measure(w.dv, gref->dv)});
    if (w.desc.has_sinks) outputs.push_back({"dsinks", measure(w.dsinks, gref->dsinks)});
  }
  return outputs;
}

// The limit on one output's max error, and how the message words it.
struct Limit {
  double max = 0;
  double baseline_mean = 0;
  std::string words;  // "2 x eager's 2.4e-03 + 1.3e-06"
};

Limit eager_limit(const Measured& eager, double scale) {
  const double floor = kFloorFp32Steps * FLT_EPSILON * std::max(1.0, scale);
  return {2 * eager.max + floor, eager.mean, fmt::format("2 x eager's {:.2g} + {:.1g}", eager.max, floor)};
}

// Without eager: the dtype's fixed tolerance, as `attnrt run` uses (gradients twice it).
Limit fixed_limit(const char* output, attnrt_dtype dtype, double scale) {
  const std::string name = output;
  if (name == "lse") return {1e-4, 0, "1e-04"};
  const double tol = (name == "out" ? 1 : 2) * output_tolerance(dtype);
  const double lim = tol * std::max(1.0, scale);
  return {lim, 0, fmt::format("{:.2g}", lim)};
}

struct Verdict {
  std::vector<std::string> failures;
  double worst_ratio = 0;  // largest error / eager's error over outputs where eager's is > 0
  std::string worst;       // "dk in causal"
};

}  // namespace

std::string check_numerics(const std::filesystem::path& lib, attnrt_dtype dtype, const std::filesystem::path& eager) {
  Backend backend(PluginLibrary::open(lib));
  const attnrt_capabilities& caps = backend.library().capabilities();

  // The baseline: the runtime's eager plugin, unless it is the plugin being checked (then the
  // dtype's fixed tolerance, as the GPU tests hold eager itself).
  std::unique_ptr<Backend> baseline;
  std::string no_baseline;
  std::error_code ec;
  if (eager.empty()) {
    no_baseline = "the runtime's eager plugin is not installed";
  } else if (std::filesystem::equivalent(eager, lib, ec)) {
    no_baseline = "this is the eager baseline itself";
  } else {
    try {
      baseline = std::make_unique<Backend>(PluginLibrary::open(eager));
    } catch (const Error& e) {
      no_baseline = std::string("eager does not load: ") + e.what();
    }
  }

  std::vector<std::pair<std::string, WorkloadSpec>> cases = {{"base", base_spec(caps, dtype)}};
  WorkloadSpec all = base_spec(caps, dtype);
  std::vector<std::string> all_names;
  for (const Feature& f : features()) {
    if (!(caps.features & f.bit)) continue;
    WorkloadSpec s = base_spec(caps, dtype);
    f.enable(s);
    cases.emplace_back(f.name, s);
    if (f.bit == ATTNRT_FEATURE_PAGED_KV && (caps.features & ATTNRT_FEATURE_VARLEN)) continue;  // exclusive
    if (f.bit == ATTNRT_FEATURE_PAGED_VARLEN_Q) continue;  // its own layout: checked alone
    f.enable(all);
    all_names.push_back(f.name);
  }
  if (all_names.size() > 1) cases.emplace_back(fmt::format("{}", fmt::join(all_names, "+")), all);
  // The largest head_dim the capabilities allow (up to 256): the support query may refuse it (the
  // capabilities are coarse), but what it accepts, forward must compute. A plugin whose support
  // query says yes to what forward refuses fails here.
  std::set<std::string> may_refuse;
  if (const int top = std::min(caps.max_head_dim > 0 ? caps.max_head_dim : 64, 256);
      top > cases.front().second.head_dim) {
    WorkloadSpec s = base_spec(caps, dtype);
    s.head_dim = top;
    const std::string name = fmt::format("head_dim {}", top);
    cases.emplace_back(name, s);
    may_refuse.insert(name);
  }

  Verdict verdict;
  std::vector<std::string> passed, fixed_cases;
  for (auto& [name, spec] : cases) {
    spec.seed = std::hash<std::string>{}(name) + dtype;
    Workload w = cpu_workload(spec, caps);
    report_case(name + ": support query");
    const std::string why = backend.unsupported_reason(w.desc);
    if (!why.empty()) {
      if (!may_refuse.count(name)) verdict.failures.push_back(fmt::format("{}: advertised but refused: {}", name, why));
      continue;
    }
    attnrt_forward_args fa = w.forward_args();
    const bool backward = spec.backward && !spec.paged;
    const bool lse = (caps.features & ATTNRT_FEATURE_LSE) != 0;
    ReferenceForward ref;
    std::optional<ReferenceBackward> gref;
    report_kit_time(seconds_of([&] {
      ref = reference_forward(w.desc, fa);
      if (backward) gref = reference_backward(w.desc, fa, *w.dout.dl());
    }));

    std::optional<std::vector<Output>> base;
    if (baseline && baseline->unsupported_reason(w.desc).empty()) {
      const double t = seconds_of([&] {
        try {
          std::vector<std::string> ignored_damage;  // eager's own conduct is not on trial here
          base = run_and_measure(*baseline, w, ref, gref ? &*gref : nullptr, lse, name + ": eager's ", &ignored_damage);
        } catch (const Error&) {
          base.reset();  // judged against the fixed tolerance instead
        }
      });
      report_kit_time(t);
      report_eager_time(t);
    }
    if (!base) fixed_cases.push_back(name);

    std::vector<Output> got;
    std::vector<std::string> damage;
    try {
      got = run_and_measure(backend, w, ref, gref ? &*gref : nullptr, lse, name + ": ", &damage);
    } catch (const Error& e) {
      verdict.failures.push_back(fmt::format("{}: accepted by its support query, then failed: {}", name, e.what()));
      continue;
    }
    if (!damage.empty()) {
      verdict.failures.push_back(fmt::format("{}: {}", name, fmt::join(damage, "; ")));
      continue;  // what it wrote where it should is beside the point
    }

    bool case_ok = true;
    for (size_t i = 0; i < got.size(); ++i) {
      const Output& o = got[i];
      const Limit lim = base ? eager_limit((*base)[i].got, o.got.scale) : fixed_limit(o.name, dtype, o.got.scale);
      std::vector<std::string> why_not;
      if (!(o.got.max <= lim.max)) {
        why_not.push_back(fmt::format("max error {:.3g} > {}", o.got.max, lim.words));
      }
      const double bias_limit = 2 * std::abs(lim.baseline_mean) + kBiasFraction * lim.max;
      if (!(std::abs(o.got.mean) <= bias_limit)) {
        why_not.push_back(fmt::format("biased: mean signed error {:+.3g}{} > {:.2g}", o.got.mean,
                                      base ? fmt::format(" (eager's {:+.2g})", lim.baseline_mean) : "", bias_limit));
      }
      if (base && (*base)[i].got.max > 0 && o.got.max / (*base)[i].got.max > verdict.worst_ratio) {
        verdict.worst_ratio = o.got.max / (*base)[i].got.max;
        verdict.worst = fmt::format("{} in {}", o.name, name);
      }
      if (why_not.empty()) continue;
      case_ok = false;
      // An advertised feature the plugin ignores: its output is what the call computes without
      // that feature, on the same tensors.
      std::string ignored;
      if (std::string(o.name) == "out") {
        for (const Feature& f : features()) {
          if (!f.disable || !(caps.features & f.bit)) continue;
          attnrt_attention_desc without = w.desc;
          f.disable(without);
          if (std::memcmp(&without, &w.desc, sizeof without) == 0) continue;  // not used by this case
          ReferenceForward ref_without;
          report_kit_time(seconds_of([&] { ref_without = reference_forward(without, fa); }));
          const Measured m = measure(w.out, ref_without.out);
          if (m.max <= lim.max) {
            ignored = fmt::format(
                "{}: {}advertised but ignored: out matches the fp64 reference without {} (max error {:.2g}), not the "
                "one with it (max error {:.3g})",
                name, name == f.name ? "" : std::string(f.name) + " ", f.name, m.max, o.got.max);
            break;
          }
        }
      }
      if (!ignored.empty()) {
        verdict.failures.push_back(ignored);
        break;  // its gradients are wrong for the same reason
      }
      verdict.failures.push_back(fmt::format("{}: {}: {}", name, o.name, fmt::join(why_not, "; ")));
    }
    if (case_ok) passed.push_back(name);
  }
  report_case("");

  if (!verdict.failures.empty()) {
    std::vector<std::string> listed(verdict.failures.begin(),
                                    verdict.failures.begin() + std::min(verdict.failures.size(), kMaxListed));
    if (verdict.failures.size() > kMaxListed)
      listed.push_back(fmt::format("and {} more", verdict.failures.size() - kMaxListed));
    throw CheckFailed(fmt::format("{}", fmt::join(listed, "; ")));
  }
  std::string rule =
      baseline ? fmt::format("within 2x eager's error, unbiased (worst: {:.1f}x, {})", verdict.worst_ratio,
                             verdict.worst.empty() ? "-" : verdict.worst)
               : fmt::format("within the fixed {} tolerance, unbiased ({})", sdk::dtype_name(dtype), no_baseline);
  if (baseline && !fixed_cases.empty())
    rule += fmt::format("; eager refused {}: fixed tolerance there", fmt::join(fixed_cases, ", "));
  return fmt::format("{} case(s) {}: {}", passed.size(), rule, fmt::join(passed, ", "));
}

}  // namespace attnrt::check
