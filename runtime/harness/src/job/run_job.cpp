#include <attnrt/harness/device_workload.hpp>
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/run_job.hpp>
#include <attnrt/harness/timing.hpp>
#include <attnrt/runtime/error.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace attnrt {
namespace {

long peak_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

bool within(double err, double tol, double scale) { return !std::isnan(err) && err <= tol * std::max(1.0, scale); }

}  // namespace

double output_tolerance(attnrt_dtype dtype) {
  switch (dtype) {
    case ATTNRT_DTYPE_FP32: return 1e-4;
    case ATTNRT_DTYPE_FP16: return 4e-3;
    case ATTNRT_DTYPE_BF16: return 3e-2;
  }
  return 0;
}

SiteRun run_site(Resolver& resolver, const std::string& site, const std::string& value, Workload& w,
                 const WorkloadSpec& spec, const RunOptions& options, FlexCall* flex) {
  SiteRun r;
  r.site = site;
  attnrt_attention_desc desc = w.desc;
  resolver.bind_device(desc);
  try {
    // Resolution sees the block, its tensors on the call's device: a backend that cannot take
    // it is passed over with its reason (or, under strict, the site fails).
    if (flex) flex->attach(desc, desc.device);
  } catch (const Error& e) {
    r.error = e.what();
    return r;
  }
  r.resolution = resolver.resolve(site, value, desc);
  if (!r.resolution.ok()) {
    r.error = r.resolution.error;
    return r;
  }
  Backend& backend = *r.resolution.backend;
  const int threads = options.num_threads;
  const int iterations = options.iterations.value_or(spec.iterations);
  try {
    DeviceWorkload dw(w, desc.device);
    const ReferenceMods mods = flex ? flex->reference_mods() : ReferenceMods{};
    const ReferenceMods* ref_mods = flex ? &mods : nullptr;
    const double forward_flops = flex ? flex->forward_flops() : w.forward_flops;
    auto time_ms = [&](const std::function<void()>& fn) {
      return median_call_ms(desc.device, nullptr, spec.warmup, iterations, fn);
    };
    // Reference first, on the call's own (low-precision) inputs.
    attnrt_forward_args fwd = w.forward_args();
    const ReferenceForward ref = reference_forward(desc, fwd, ref_mods);
    if (flex) flex->check_reads();

    // Checked run on poisoned outputs, then timing.
    attnrt_forward_args dfwd = dw.forward_args();
    dw.poison_forward_outputs();
    backend.forward(desc, dfwd, threads);
    dw.download_forward_outputs();
    r.err_out = max_abs_error(*w.out.dl(), ref.out);
    r.err_lse = desc.return_lse ? max_abs_error(*w.lse.dl(), ref.lse) : 0.0;
    r.tol_out = output_tolerance(desc.dtype);
    bool ok = within(r.err_out, r.tol_out, max_abs(ref.out)) && (!desc.return_lse || within(r.err_lse, r.tol_out, 1.0));
    if (w.model_out)
      r.err_vs_model = max_abs_error(*w.out.dl(), [&] {
        std::vector<double> m(w.model_out->numel());
        for (int64_t i = 0; i < w.model_out->numel(); ++i) m[i] = w.model_out->get(i);
        return m;
      }());
    r.forward_ms = time_ms([&] { backend.forward(desc, dfwd, threads); });
    r.forward_tflops = forward_flops / (r.forward_ms * 1e-3) / 1e12;
    r.tokens_per_s = static_cast<double>(w.total_q) / (r.forward_ms * 1e-3);
    r.workspace_bytes = backend.workspace_bytes();

    if (spec.backward && flex) r.backward_note = flex->backward_refusal();
    if (spec.backward && backend.has_backward() && r.backward_note.empty()) {
      attnrt_backward_args dbwd = dw.backward_args();
      const ReferenceBackward gref = reference_backward(desc, fwd, *w.dout.dl(), ref_mods);
      if (flex) flex->check_reads();
      dw.poison_backward_outputs();
      bool refused = false;
      try {
        backend.backward(desc, dbwd, threads);
      } catch (const Error& e) {
        // A plugin with a backward entry that refuses this call (the ABI has no backward support
        // query): the forward's result stands, and the refusal is reported, not a failure.
        if (e.status() != ATTNRT_ERROR_UNSUPPORTED) throw;
        r.backward_note = std::string("backward not run: ") + e.what();
        refused = true;
      }
      if (!refused) {
        dw.download_backward_outputs();
        r.backward_checked = true;
        r.err_dq = max_abs_error(*w.dq.dl(), gref.dq);
        r.err_dk = max_abs_error(*w.dk.dl(), gref.dk);
        r.err_dv = max_abs_error(*w.dv.dl(), gref.dv);
        r.err_dsinks = desc.has_sinks ? max_abs_error(*w.dsinks.dl(), gref.dsinks) : 0.0;
        r.tol_grad = 2 * output_tolerance(desc.dtype);
        ok = ok && within(r.err_dq, r.tol_grad, max_abs(gref.dq)) && within(r.err_dk, r.tol_grad, max_abs(gref.dk)) &&
             within(r.err_dv, r.tol_grad, max_abs(gref.dv)) &&
             (!desc.has_sinks || within(r.err_dsinks, r.tol_grad, max_abs(gref.dsinks)));
        r.backward_ms = time_ms([&] { backend.backward(desc, dbwd, threads); });
        r.backward_tflops = 2.5 * forward_flops / (r.backward_ms * 1e-3) / 1e12;
        r.workspace_bytes = std::max(r.workspace_bytes, backend.workspace_bytes());
      }
    }
    r.tensor_bytes = w.tensor_bytes();
    r.peak_rss_kb = peak_rss_kb();
    r.ran = true;
    r.passed = ok;
    if (!ok) r.error = "result outside tolerance of the fp64 reference";
  } catch (const Error& e) {
    r.error = e.what();
  }
  return r;
}

}  // namespace attnrt
