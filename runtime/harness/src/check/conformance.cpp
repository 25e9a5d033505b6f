#include "isolation.hpp"

#include <attnrt/runtime/backend.hpp>
#include <attnrt/harness/conformance.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/harness/reference.hpp>
#include <attnrt/runtime/resolver.hpp>
#include <attnrt/harness/run_job.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/validate.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <thread>

namespace attnrt {
namespace {

using check::CheckFailed;
using check::CheckSkipped;

constexpr uint64_t kKnownFeatures = (ATTNRT_FEATURE_HEAD_DIM_V << 1) - 1;

struct Message {
  char text[2048] = {0};
  attnrt_message m{sizeof(attnrt_message), text, sizeof text};
};

// One feature a plugin may advertise, and how to turn it on in a workload.
struct Feature {
  const char* name;
  uint64_t bit;
  void (*enable)(WorkloadSpec&);
};

const std::vector<Feature>& features() {
  static const std::vector<Feature> f = {
      {"gqa", ATTNRT_FEATURE_GQA, [](WorkloadSpec& s) { s.heads_kv = 2; }},
      {"causal", ATTNRT_FEATURE_CAUSAL, [](WorkloadSpec& s) { s.causal = true; }},
      {"window", ATTNRT_FEATURE_SLIDING_WINDOW, [](WorkloadSpec& s) { s.window_left = 12; s.window_right = 4; }},
      {"softcap", ATTNRT_FEATURE_SOFTCAP, [](WorkloadSpec& s) { s.softcap = 1.5f; }},
      {"sinks", ATTNRT_FEATURE_SINKS, [](WorkloadSpec& s) { s.sinks = true; }},
      {"alibi", ATTNRT_FEATURE_ALIBI, [](WorkloadSpec& s) { s.alibi = true; }},
      {"varlen", ATTNRT_FEATURE_VARLEN, [](WorkloadSpec& s) { s.seqlens_q = {7, 0, 33}; s.seqlens_k = {9, 5, 40}; }},
      {"paged", ATTNRT_FEATURE_PAGED_KV, [](WorkloadSpec& s) { s.paged = true; s.page_size = 16; }},
      {"head_dim_v", ATTNRT_FEATURE_HEAD_DIM_V, [](WorkloadSpec& s) { s.head_dim_v = s.head_dim / 2; }},
  };
  return f;
}

attnrt_dtype dtype_of_bit(uint32_t bit) {
  return bit == ATTNRT_DTYPE_BIT_FP16 ? ATTNRT_DTYPE_FP16 : bit == ATTNRT_DTYPE_BIT_BF16 ? ATTNRT_DTYPE_BF16 : ATTNRT_DTYPE_FP32;
}

WorkloadSpec base_spec(const attnrt_capabilities& caps, attnrt_dtype dtype) {
  WorkloadSpec s;
  s.dtype = dtype;
  s.batch = 2;
  s.seqlen_q = 40;
  s.seqlen_k = 56;
  s.heads_q = 4;
  s.heads_kv = 4;
  s.head_dim = std::clamp(64, std::max(1, caps.min_head_dim), caps.max_head_dim > 0 ? caps.max_head_dim : 64);
  s.backward = (caps.features & ATTNRT_FEATURE_BACKWARD) != 0;
  s.return_lse = (caps.features & ATTNRT_FEATURE_LSE) != 0;
  return s;
}

Workload cpu_workload(WorkloadSpec spec, const attnrt_capabilities& caps) {
  spec.return_lse = (caps.features & ATTNRT_FEATURE_LSE) != 0;
  const bool backward = spec.backward;
  spec.backward = false;  // LSE on only when advertised: backward needs it, so it is asked below
  Workload w = make_workload(spec);
  w.desc.return_lse = spec.return_lse || backward ? 1 : 0;
  w.desc.device = DLDevice{kDLCPU, 0};
  return w;
}

// A plugin instance driven straight through its C table (no host-side validation).
struct Raw {
  std::shared_ptr<PluginLibrary> lib;
  attnrt_instance* inst = nullptr;
  explicit Raw(const std::filesystem::path& path) : lib(PluginLibrary::open(path)) {
    attnrt_host_info host{sizeof host, ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR, nullptr, nullptr};
    Message err;
    if (lib->api().create(&host, &inst, &err.m) != ATTNRT_OK) throw CheckFailed(std::string("create failed: ") + err.text);
  }
  ~Raw() {
    if (inst) lib->api().destroy(inst);
  }
  const attnrt_plugin_api& api() const { return lib->api(); }
  std::string unsupported(const attnrt_attention_desc& d) const {
    Message why;
    const attnrt_status s = api().supports(inst, &d, &why.m);
    if (s == ATTNRT_OK) return "";
    return why.text[0] ? why.text : std::string("(no reason given, status ") + status_name(s) + ")";
  }
  attnrt_status forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, std::vector<char>& ws, Message& err) const {
    size_t bytes = 0;
    Message e;
    if (api().workspace_size(inst, &d, 0, 1, &bytes, &e.m) != ATTNRT_OK) bytes = 1 << 20;
    ws.assign(bytes + 256, 0);
    void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ws.data()) + 255) / 256 * 256);
    attnrt_exec exec{sizeof exec, nullptr, bytes ? aligned : nullptr, bytes, 1};
    return api().forward(inst, &d, &a, &exec, &err.m);
  }
};

std::string join(const std::vector<std::string>& v, const char* sep = "; ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// numerics/cpu/<dtype>: the base call and every advertised feature alone and together.
std::string check_numerics(const std::filesystem::path& path, attnrt_dtype dtype) {
  Backend backend(PluginLibrary::open(path));
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
  if (all_names.size() > 1) cases.emplace_back(join(all_names, "+"), all);

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
    if (!(e_out <= lim)) failures.push_back(fmt::format("{}: max |out - fp64 reference| = {:.3g} > {:.3g}", name, e_out, lim));
    if (caps.features & ATTNRT_FEATURE_LSE) {
      const double e_lse = max_abs_error(*w.lse.dl(), ref.lse);
      if (!(e_lse <= 1e-4)) failures.push_back(fmt::format("{}: max |lse - fp64 reference| = {:.3g} > 1e-4", name, e_lse));
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
          if (!(e.first <= glim)) failures.push_back(fmt::format("{}: max |{} - fp64 reference| = {:.3g} > {:.3g}", name, gname, e.first, glim));
        }
      } catch (const Error& e) {
        failures.push_back(fmt::format("{}: backward failed: {}", name, e.what()));
      }
    }
    passed.push_back(name);
  }
  if (!failures.empty()) throw CheckFailed(join(failures));
  return fmt::format("{} case(s) within {:.0e} of the fp64 reference: {}", passed.size(), tol, join(passed, ", "));
}

// support-query: every feature not advertised is refused by supports() with a reason, and
// forward refuses it too (never computes something else).
std::string check_support_query(const std::filesystem::path& path) {
  Raw raw(path);
  const attnrt_capabilities& caps = raw.lib->capabilities();
  const attnrt_dtype dtype = dtype_of_bit(caps.dtypes & -caps.dtypes);
  std::vector<std::pair<std::string, WorkloadSpec>> probes;
  for (const Feature& f : features()) {
    if (caps.features & f.bit) continue;
    WorkloadSpec s = base_spec(caps, dtype);
    f.enable(s);
    probes.emplace_back(f.name, s);
  }
  std::vector<std::string> failures, refused;
  auto probe = [&](const std::string& name, Workload& w) {
    const std::string why = raw.unsupported(w.desc);
    if (why.empty()) {
      failures.push_back(name + ": not advertised, but the support query accepts it");
      return;
    }
    attnrt_forward_args fa = w.forward_args();
    std::vector<char> ws;
    Message err;
    if (raw.forward(w.desc, fa, ws, err) == ATTNRT_OK) failures.push_back(name + ": refused by supports() but forward computed it");
    refused.push_back(name);
  };
  for (auto& [name, spec] : probes) {
    Workload w = cpu_workload(spec, caps);
    probe(name, w);
  }
  {  // flags that need no extra tensors
    Workload w = cpu_workload(base_spec(caps, dtype), caps);
    w.desc.dropout_p = 0.25f;
    if (!(caps.features & ATTNRT_FEATURE_DROPOUT)) probe("dropout", w);
    w.desc.dropout_p = 0.0f;
    w.desc.deterministic = 1;
    if (!(caps.features & ATTNRT_FEATURE_DETERMINISTIC)) probe("deterministic", w);
  }
  if (caps.max_head_dim > 0 && caps.max_head_dim < 1024) {
    WorkloadSpec s = base_spec(caps, dtype);
    s.head_dim = caps.max_head_dim + 8;
    Workload w = cpu_workload(s, caps);
    probe(fmt::format("head_dim {}", s.head_dim), w);
  }
  for (uint32_t bit : {ATTNRT_DTYPE_BIT_FP32, ATTNRT_DTYPE_BIT_FP16, ATTNRT_DTYPE_BIT_BF16}) {
    if (caps.dtypes & bit) continue;
    Workload w = cpu_workload(base_spec(caps, dtype_of_bit(bit)), caps);
    probe(sdk::dtype_name(dtype_of_bit(bit)), w);
  }
  if (!failures.empty()) throw CheckFailed(join(failures));
  return refused.empty() ? "the plugin advertises every feature" : "refused with a reason: " + join(refused, ", ");
}

// bad-arguments/<mistake>: straight through the C table, no host validation in between.
std::string check_bad_argument(const std::filesystem::path& path, const std::string& mistake) {
  Raw raw(path);
  const attnrt_capabilities& caps = raw.lib->capabilities();
  Workload w = cpu_workload(base_spec(caps, dtype_of_bit(caps.dtypes & -caps.dtypes)), caps);
  if (!raw.unsupported(w.desc).empty()) throw CheckSkipped("the plugin refuses the base call: " + raw.unsupported(w.desc));
  attnrt_forward_args a = w.forward_args();
  HostTensor other;
  DLTensor view;
  int64_t strides[4];
  if (mistake == "null-q") {
    a.q = nullptr;
  } else if (mistake == "null-data") {
    view = *w.k.dl();
    view.data = nullptr;
    a.k = &view;
  } else if (mistake == "wrong-dtype") {
    other = w.k.to(DLDataType{kDLFloat, 64, 1});
    a.k = other.dl();
  } else if (mistake == "shape-mismatch") {
    std::vector<int64_t> shape = w.v.shape();
    shape[1] += 3;
    other = HostTensor(shape, w.v.dtype());
    a.v = other.dl();
  } else if (mistake == "misaligned") {
    view = *w.q.dl();
    view.byte_offset = 1;
    a.q = &view;
  } else if (mistake == "non-contiguous") {
    view = *w.k.dl();
    const auto& s = w.k.shape();
    strides[3] = 2;
    strides[2] = s[3] * 2;
    strides[1] = s[2] * strides[2];
    strides[0] = s[1] * strides[1];
    view.strides = strides;
    a.k = &view;
  } else if (mistake == "wrong-device") {
    view = *w.v.dl();
    view.device = DLDevice{kDLCUDA, 0};
    a.v = &view;
  }
  std::vector<char> ws;
  Message err;
  const attnrt_status s = raw.forward(w.desc, a, ws, err);
  if (s == ATTNRT_OK) throw CheckFailed("accepted the call and returned ATTNRT_OK");
  if (err.text[0] == '\0') throw CheckFailed(std::string("returned ") + status_name(s) + " without a message");
  return std::string(status_name(s)) + ": " + err.text;
}

// threads: N threads call forward at once on the same inputs with their own outputs and
// workspaces; every result must equal the serial one bit for bit.
std::string check_threads(const std::filesystem::path& path, int threads) {
  Raw raw(path);
  const attnrt_capabilities& caps = raw.lib->capabilities();
  WorkloadSpec spec = base_spec(caps, dtype_of_bit(caps.dtypes & -caps.dtypes));
  spec.batch = 2;
  spec.seqlen_q = spec.seqlen_k = 96;
  Workload w = cpu_workload(spec, caps);
  if (!raw.unsupported(w.desc).empty()) throw CheckSkipped("the plugin refuses the base call");
  attnrt_forward_args serial_args = w.forward_args();
  std::vector<char> ws;
  Message err;
  if (raw.forward(w.desc, serial_args, ws, err) != ATTNRT_OK) throw CheckFailed(std::string("serial forward failed: ") + err.text);
  std::vector<HostTensor> outs(threads, w.out), lses(threads, w.lse);
  std::vector<std::string> errors(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      attnrt_forward_args a = serial_args;
      outs[t].fill_nan();
      a.out = outs[t].dl();
      a.lse = w.desc.return_lse ? lses[t].dl() : nullptr;
      std::vector<char> my_ws;
      Message e;
      for (int rep = 0; rep < 3; ++rep) {
        if (raw.forward(w.desc, a, my_ws, e) != ATTNRT_OK) errors[t] = e.text;
      }
    });
  }
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) {
    if (!errors[t].empty()) throw CheckFailed(fmt::format("thread {}: {}", t, errors[t]));
    if (std::memcmp(outs[t].data(), w.out.data(), w.out.nbytes()) != 0) throw CheckFailed(fmt::format("thread {}: out differs from the serial call", t));
  }
  return fmt::format("{} threads x 3 calls agree with the serial call bit for bit", threads);
}

// deterministic: repeats with desc.deterministic = 1 are bit-identical (forward, backward).
std::string check_deterministic(const std::filesystem::path& path) {
  Backend backend(PluginLibrary::open(path));
  const attnrt_capabilities& caps = backend.library().capabilities();
  if (!(caps.features & ATTNRT_FEATURE_DETERMINISTIC)) throw CheckSkipped("not advertised");
  WorkloadSpec spec = base_spec(caps, dtype_of_bit(caps.dtypes & -caps.dtypes));
  if (caps.features & ATTNRT_FEATURE_CAUSAL) spec.causal = true;
  if (caps.features & ATTNRT_FEATURE_GQA) spec.heads_kv = 2;
  Workload w = cpu_workload(spec, caps);
  w.desc.deterministic = 1;
  attnrt_forward_args fa = w.forward_args();
  std::vector<HostTensor> first;
  for (int rep = 0; rep < 3; ++rep) {
    backend.forward(w.desc, fa, rep == 0 ? 1 : 0);
    std::vector<HostTensor> now = {w.out};
    if (spec.backward) {
      attnrt_backward_args ba = w.backward_args();
      backend.backward(w.desc, ba, rep == 0 ? 1 : 0);
      now.insert(now.end(), {w.dq, w.dk, w.dv});
    }
    if (rep == 0) {
      first = now;
      continue;
    }
    const char* names[] = {"out", "dq", "dk", "dv"};
    for (size_t i = 0; i < now.size(); ++i) {
      if (std::memcmp(now[i].data(), first[i].data(), now[i].nbytes()) != 0) {
        throw CheckFailed(fmt::format("{} differs between repeats (1 thread vs the default)", names[i]));
      }
    }
  }
  return spec.backward ? "forward and backward repeat bit for bit" : "forward repeats bit for bit";
}

PluginRecord record_for(const std::string& plugin, Registry& registry) {
  // On the command line an existing file or folder is a path even without './' (in a config,
  // classify_value's rule alone decides).
  const ParsedValue v = classify_value(plugin);
  std::error_code ec;
  if (v.form == ValueForm::kPath || std::filesystem::exists(plugin, ec)) return registry.record_for_path(plugin);
  if (v.form == ValueForm::kHub) {
    if (auto r = registry.find_hub(v.org, v.name, v.version)) return *r;
    throw Error("hub plugin '" + plugin + "' is not under the plugin search path");
  }
  if (const PluginRecord* r = registry.find(plugin)) return *r;
  throw Error("no plugin named '" + plugin + "' (give a name, a .so path, a plugin directory or org/name)");
}

}  // namespace

bool ConformanceReport::passed() const { return count(CheckResult::Status::kFail) == 0; }

int ConformanceReport::count(CheckResult::Status s) const {
  int n = 0;
  for (const auto& c : checks) n += c.status == s;
  return n;
}

const char* status_word(CheckResult::Status s) {
  return s == CheckResult::Status::kPass ? "PASS" : s == CheckResult::Status::kFail ? "FAIL" : "SKIP";
}

ConformanceReport run_conformance(const std::string& plugin, Registry& registry, const ConformanceOptions& options) {
  const PluginRecord record = record_for(plugin, registry);
  const std::filesystem::path lib = record.library;
  ConformanceReport report;
  report.plugin = plugin;
  report.library = lib.string();
  auto run = [&](const std::string& name, const std::function<std::string()>& body) {
    report.checks.push_back(check::run_isolated(name, body, options.timeout_seconds));
    return report.checks.back().status != CheckResult::Status::kFail;
  };

  const bool loads = run("load", [&] {
    auto l = PluginLibrary::open(lib);
    return fmt::format("{} {} (ABI {}), {}", l->name(), l->version(), l->abi_version(), describe_devices(l->capabilities()));
  });
  run("exports", [&] {
    const auto syms = elf_exported_symbols(lib);
    if (syms.size() == 1 && syms[0] == ATTNRT_PLUGIN_ENTRY_SYMBOL) return std::string("exactly " ATTNRT_PLUGIN_ENTRY_SYMBOL);
    throw CheckFailed(fmt::format("expected only " ATTNRT_PLUGIN_ENTRY_SYMBOL ", found {} symbol(s): {}", syms.size(),
                                  join(std::vector<std::string>(syms.begin(), syms.begin() + std::min<size_t>(syms.size(), 8)), ", ")));
  });
  if (!loads) {
    for (const char* name : {"abi", "manifest", "create", "numerics", "support-query", "bad-arguments", "threads", "deterministic"}) {
      report.checks.push_back({name, CheckResult::Status::kSkip, "the plugin does not load", 0});
    }
    return report;
  }
  run("abi", [&] {
    auto l = PluginLibrary::open(lib);
    const attnrt_plugin_api& api = l->api();
    const attnrt_capabilities& c = l->capabilities();
    std::vector<std::string> problems;
    if (api.abi_minor > ATTNRT_ABI_VERSION_MINOR) problems.push_back(fmt::format("built against a newer minor ({}.{}) than this kit ({}.{}): newer fields are not checked", api.abi_major, api.abi_minor, ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR));
    if (!api.version || !api.description) problems.push_back("version and description must not be NULL");
    if (!c.devices) problems.push_back("capabilities.devices is empty");
    if (!c.dtypes) problems.push_back("capabilities.dtypes is empty");
    if (c.features & ~kKnownFeatures) problems.push_back(fmt::format("unknown feature bits {:#x}", c.features & ~kKnownFeatures));
    if (c.min_head_dim < 1 || (c.max_head_dim > 0 && c.max_head_dim < c.min_head_dim)) problems.push_back("head_dim range is empty");
    if (!(c.features & ATTNRT_FEATURE_BACKWARD) && api.backward) problems.push_back("has a backward entry but does not advertise backward");
    if (!problems.empty() && !(problems.size() == 1 && api.abi_minor > ATTNRT_ABI_VERSION_MINOR)) throw CheckFailed(join(problems));
    return fmt::format("ABI {}.{}, table {} bytes, capabilities {} bytes", api.abi_major, api.abi_minor, api.struct_size, c.struct_size);
  });
  run("manifest", [&] {
    if (!record.manifest) throw CheckSkipped("a loose library, no manifest");
    auto l = PluginLibrary::open(lib);
    const Manifest& m = *record.manifest;
    if (m.name != l->name()) throw CheckFailed(fmt::format("{} says '{}' but the library calls itself '{}'", m.source.string(), m.name, l->name()));
    if (!m.version.empty() && m.version != l->version()) throw CheckFailed(fmt::format("{} says version {} but the library says {}", m.source.string(), m.version, l->version()));
    return fmt::format("{}: name {}{}", m.source.filename().string(), m.name, m.aliases.empty() ? "" : ", aliases " + join(m.aliases, ", "));
  });
  const bool creates = run("create", [&] {
    for (int i = 0; i < 3; ++i) Raw raw(lib);
    return std::string("create/destroy x3");
  });
  if (!creates) return report;

  const attnrt_capabilities caps = PluginLibrary::open(lib)->capabilities();  // plain data, no plugin code runs
  if (caps.devices & ATTNRT_DEVICE_BIT_CPU) {
    for (uint32_t bit : {ATTNRT_DTYPE_BIT_FP32, ATTNRT_DTYPE_BIT_FP16, ATTNRT_DTYPE_BIT_BF16}) {
      if (!(caps.dtypes & bit)) continue;
      const attnrt_dtype dt = dtype_of_bit(bit);
      run(std::string("numerics/cpu/") + sdk::dtype_name(dt), [&] { return check_numerics(lib, dt); });
    }
    run("support-query", [&] { return check_support_query(lib); });
    for (const char* mistake : {"null-q", "null-data", "wrong-dtype", "shape-mismatch", "misaligned", "non-contiguous", "wrong-device"}) {
      run(std::string("bad-arguments/") + mistake, [&] { return check_bad_argument(lib, mistake); });
    }
    run("threads", [&] { return check_threads(lib, options.threads); });
    run("deterministic", [&] { return check_deterministic(lib); });
  }
  if (caps.devices & ATTNRT_DEVICE_BIT_CUDA) {
    report.checks.push_back({"numerics/cuda", CheckResult::Status::kSkip,
                             "CUDA numerics are not run by attnrt check (its checks run in forked children, where "
                             "CUDA cannot be used once the parent has initialized it); the shipped CUDA plugins are "
                             "checked by attnrt_gpu_tests", 0});
  }
  return report;
}

namespace {
std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}
}  // namespace

std::string to_junit_xml(const ConformanceReport& r) {
  double total = 0;
  for (const auto& c : r.checks) total += c.seconds;
  std::string x = fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
                              "  <testsuite name=\"attnrt check {}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n",
                              xml_escape(r.plugin), r.checks.size(), r.count(CheckResult::Status::kFail),
                              r.count(CheckResult::Status::kSkip), total);
  for (const auto& c : r.checks) {
    x += fmt::format("    <testcase classname=\"attnrt.check\" name=\"{}\" time=\"{:.3f}\"", xml_escape(c.name), c.seconds);
    if (c.status == CheckResult::Status::kFail) {
      x += fmt::format(">\n      <failure message=\"{}\"/>\n    </testcase>\n", xml_escape(c.detail));
    } else if (c.status == CheckResult::Status::kSkip) {
      x += fmt::format(">\n      <skipped message=\"{}\"/>\n    </testcase>\n", xml_escape(c.detail));
    } else {
      x += "/>\n";
    }
  }
  return x + "  </testsuite>\n</testsuites>\n";
}

}  // namespace attnrt
