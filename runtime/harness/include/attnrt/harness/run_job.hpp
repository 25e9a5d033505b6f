// `attnrt run`: for each attention site, resolve a backend for the workload, check it against
// the fp64 reference, and time it.
#pragma once

#include <attnrt/harness/flex_config.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/resolver.hpp>

#include <optional>
#include <string>

namespace attnrt {

struct SiteRun {
  std::string site;
  Resolution resolution;
  bool ran = false;
  std::string error;                               // resolution or run failure
  double forward_ms = 0, backward_ms = 0;          // medians
  double forward_tflops = 0, backward_tflops = 0;  // backward counted as 2.5x forward FLOPs
  double tokens_per_s = 0;                         // query tokens per second, forward
  size_t workspace_bytes = 0, tensor_bytes = 0;
  long peak_rss_kb = 0;
  double err_out = 0, err_lse = 0, err_dq = 0, err_dk = 0, err_dv = 0, err_dsinks = 0;
  double tol_out = 0, tol_grad = 0;
  bool backward_checked = false;
  std::string backward_note;           // why backward was not run although the workload asks for it
  std::optional<double> err_vs_model;  // against the source model's own attention output
  bool passed = false;
};

struct RunOptions {
  int num_threads = 0;
  std::optional<int> iterations;
};

// Runs one site. Never throws for a backend problem: the SiteRun says what failed. With `flex`
// (the site's attnrt.flex mods for this workload) the calls carry its block, resolution passes
// over backends that cannot take it (each with its reason), the reference applies the same mods,
// and the FLOPs count the pairs mask_mod leaves visible.
SiteRun run_site(Resolver& resolver, const std::string& site, const std::string& value, Workload& workload,
                 const WorkloadSpec& spec, const RunOptions& options, FlexCall* flex = nullptr);

// Tolerances of the CLI's pass/fail line: max |error| <= tol * max(1, max |reference|).
double output_tolerance(attnrt_dtype dtype);

}  // namespace attnrt
