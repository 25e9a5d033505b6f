// attnrt run [CONFIG] [OVERRIDES...] [--json]: the main job. For each attention site, resolve
// a backend for the workload, check forward (and backward) against the fp64 reference, time
// it, and report. With no CONFIG it runs the embedded configs/default.yaml. A site with
// flex_attention mods (attnrt.flex.<site>, harness/flex_config.hpp) runs its calls with them and
// is checked against the reference with the same mods.
#include "commands.hpp"
#include "options.hpp"
#include "table.hpp"

#include <attnrt/harness/flex_config.hpp>
#include <attnrt/harness/run_job.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/runtime.hpp>
#include <attnrt/validate.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace attnrt::cli {
namespace {

std::string bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (b >= 1024 && u < 3) {
    b /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", b, units[u]);
}

std::string describe_call(const attnrt_attention_desc& d, const Workload& w) {
  std::string s = fmt::format("{} batch {} heads {}/{} head_dim {}", sdk::dtype_name(d.dtype), d.batch, d.heads_q,
                              d.heads_kv, d.head_dim);
  if (d.head_dim_v != d.head_dim) s += fmt::format("/{}", d.head_dim_v);
  s += d.is_varlen ? fmt::format(" varlen ({} tokens, max seqlen {})", w.total_q, d.seqlen_q)
                   : fmt::format(" seqlen {}x{}", d.seqlen_q, d.seqlen_k);
  if (d.causal) s += " causal";
  if (d.window_left >= 0 || d.window_right >= 0) s += fmt::format(" window ({}, {})", d.window_left, d.window_right);
  if (d.softcap > 0) s += fmt::format(" softcap {}", d.softcap);
  if (d.has_sinks) s += " sinks";
  if (d.has_alibi) s += " alibi";
  if (d.is_paged) s += fmt::format(" paged (page_size {})", d.page_size);
  return s;
}

}  // namespace

int run_command(const CommonArgs& args) {
  Runtime rt(runtime_options(args));
  use_config_log_level(rt);
  std::vector<std::string> warnings;
  const WorkloadSpec spec = read_workload(rt.config(), Runtime::data_dir(), &warnings);
  for (const auto& w : warnings) fmt::print(stderr, "WARNING: {}\n", w);
  Workload workload = make_workload(spec);
  if (rt.sites().sites.empty())
    throw Error("the configuration has no attention site (no attn_implementation or override_config)");
  std::vector<std::string> site_names;
  for (const Site& site : rt.sites().sites) site_names.push_back(site.name);
  const FlexSpecs flex_specs = read_flex(rt.config(), site_names);
  RunOptions options;
  options.num_threads = args.threads > 0 ? args.threads : rt.settings().num_threads;
  if (args.iterations > 0) options.iterations = args.iterations;

  nlohmann::json j;
  j["workload"] = {{"source", workload.source},
                   {"call", describe_call(workload.desc, workload)},
                   {"forward_flops", workload.forward_flops},
                   {"tokens", workload.total_q}};
  j["sites"] = nlohmann::json::array();
  Table table({"SITE", "BACKEND", "FWD ms", "FWD TFLOP/s", "tokens/s", "BWD ms", "BWD TFLOP/s", "WORKSPACE", "PEAK RSS",
               "MAX ERR out/lse", "MAX ERR dq/dk/dv", "STATUS"});
  int failures = 0;
  std::vector<std::string> notes;
  for (const Site& site : rt.sites().sites) {
    // The site's mods for this workload: compiled, the block mask built (a mod that does not
    // compile fails this site, with the compiler's messages).
    std::unique_ptr<FlexCall> flex;
    SiteRun r;
    r.site = site.name;
    if (auto it = flex_specs.find(site.name); it != flex_specs.end()) {
      try {
        flex = std::make_unique<FlexCall>(it->second, workload);
        notes.push_back(fmt::format("{}: flex_attention mods: {}", site.name, flex->describe()));
      } catch (const Error& e) {
        r.error = e.what();
      }
    }
    const bool flex_failed = !r.error.empty();
    if (!flex_failed) r = run_site(rt.resolver(), site.name, site.value, workload, spec, options, flex.get());
    nlohmann::json e = resolution_json(r.resolution);
    if (flex) e["flex"] = flex->describe();
    if (!r.backward_note.empty()) e["backward_note"] = r.backward_note;
    e.update({{"ran", r.ran},
              {"passed", r.passed},
              {"forward_ms", r.forward_ms},
              {"forward_tflops", r.forward_tflops},
              {"tokens_per_s", r.tokens_per_s},
              {"backward_ms", r.backward_ms},
              {"backward_tflops", r.backward_tflops},
              {"workspace_bytes", r.workspace_bytes},
              {"tensor_bytes", r.tensor_bytes},
              {"peak_rss_kb", r.peak_rss_kb},
              {"max_error",
               {{"out", r.err_out},
                {"lse", r.err_lse},
                {"dq", r.err_dq},
                {"dk", r.err_dk},
                {"dv", r.err_dv},
                {"dsinks", r.err_dsinks}}},
              {"tolerance", {{"out", r.tol_out}, {"grad", r.tol_grad}}},
              {"run_error", r.error}});
    if (r.err_vs_model) e["max_error_vs_source_model"] = *r.err_vs_model;
    j["sites"].push_back(e);
    if (!r.passed) ++failures;
    const std::string backend =
        r.resolution.ok() ? r.resolution.chosen + (r.resolution.fell_back ? " (fallback)" : "") : "(none)";
    if (!r.ran) {
      table.add({site.name, backend, "-", "-", "-", "-", "-", "-", "-", "-", "-", "FAIL"});
      notes.push_back(site.name + ": " + r.error);
      continue;
    }
    const bool bwd = r.backward_checked;
    table.add({site.name, backend, fmt::format("{:.3f}", r.forward_ms), fmt::format("{:.3f}", r.forward_tflops),
               fmt::format("{:.3g}", r.tokens_per_s), bwd ? fmt::format("{:.3f}", r.backward_ms) : "-",
               bwd ? fmt::format("{:.3f}", r.backward_tflops) : "-", bytes(static_cast<double>(r.workspace_bytes)),
               bytes(r.peak_rss_kb * 1024.0), fmt::format("{:.2e}/{:.2e}", r.err_out, r.err_lse),
               bwd ? fmt::format("{:.2e}/{:.2e}/{:.2e}", r.err_dq, r.err_dk, r.err_dv) : "-",
               r.passed ? "PASS" : "FAIL"});
    if (r.err_vs_model) {
      notes.push_back(
          fmt::format("{}: max |out - source model's own attention output| = {:.2e}", site.name, *r.err_vs_model));
    }
    if (!r.backward_note.empty()) notes.push_back(site.name + ": " + r.backward_note);
    if (!r.passed) notes.push_back(site.name + ": " + r.error);
  }
  if (args.json) {
    std::puts(j.dump(2).c_str());
  } else {
    fmt::print("workload: {}\ncall: {}\nthreads: {}\n\n", workload.source, describe_call(workload.desc, workload),
               options.num_threads > 0 ? std::to_string(options.num_threads) : "all");
    table.print();
    for (const std::string& n : notes) fmt::print("{}\n", n);
    fmt::print("\n{} passed, {} failed\n", j["sites"].size() - failures, failures);
  }
  return failures ? 1 : 0;
}

}  // namespace attnrt::cli
