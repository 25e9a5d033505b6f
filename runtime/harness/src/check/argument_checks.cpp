// support-query and bad-arguments/<mistake>: what a plugin does with a call it must not
// compute. Both go straight through the C table, with no host validation in between, so that
// the host's own checks cannot hide a plugin that makes none.
#include "checks.hpp"
#include "fixtures.hpp"
#include "isolation.hpp"

#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/validate.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <utility>
#include <vector>

namespace attnrt::check {

// Every feature not advertised is refused by supports() with a reason, and forward refuses it
// too (never computes something else).
std::string check_support_query(const std::filesystem::path& lib) {
  RawPlugin raw(lib);
  const attnrt_capabilities& caps = raw.lib->capabilities();
  const attnrt_dtype dtype = first_dtype(caps);
  std::vector<std::pair<std::string, WorkloadSpec>> probes;
  for (const Feature& f : features()) {
    if (caps.features & f.bit) continue;
    // ABI 1.2's paged + varlen combination is never sent to an older plugin (the host refuses it).
    if (f.bit == ATTNRT_FEATURE_PAGED_VARLEN_Q && raw.api().abi_minor < 2) continue;
    WorkloadSpec s = base_spec(caps, dtype);
    f.enable(s);
    probes.emplace_back(f.name, s);
  }
  std::vector<std::string> failures, refused;
  auto probe = [&](const std::string& name, Workload& w) {
    report_case(name + ": support query, then forward");
    const std::string why = raw.unsupported(w.desc);
    if (why.empty()) {
      failures.push_back(name + ": not advertised, but the support query accepts it");
      return;
    }
    attnrt_forward_args fa = w.forward_args();
    std::vector<char> ws;
    sdk::MessageBuffer err;
    if (raw.forward(w.desc, fa, ws, err) == ATTNRT_OK)
      failures.push_back(name + ": refused by supports() but forward computed it");
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
  for (uint32_t bit : kDtypeBits) {
    if (caps.dtypes & bit) continue;
    Workload w = cpu_workload(base_spec(caps, dtype_of_bit(bit)), caps);
    probe(sdk::dtype_name(dtype_of_bit(bit)), w);
  }
  if (!failures.empty()) throw CheckFailed(fmt::format("{}", fmt::join(failures, "; ")));
  return refused.empty() ? "the plugin advertises every feature"
                         : fmt::format("refused with a reason: {}", fmt::join(refused, ", "));
}

// One mistake in an otherwise supported call: the plugin returns an error with a message.
std::string check_bad_argument(const std::filesystem::path& lib, const std::string& mistake) {
  RawPlugin raw(lib);
  const attnrt_capabilities& caps = raw.lib->capabilities();
  Workload w = cpu_workload(base_spec(caps, first_dtype(caps)), caps);
  if (!raw.unsupported(w.desc).empty())
    throw CheckSkipped("the plugin refuses the base call: " + raw.unsupported(w.desc));
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
  sdk::MessageBuffer err;
  const attnrt_status s = raw.forward(w.desc, a, ws, err);
  if (s == ATTNRT_OK) throw CheckFailed("accepted the call and returned ATTNRT_OK");
  if (err.empty()) throw CheckFailed(std::string("returned ") + status_name(s) + " without a message");
  return std::string(status_name(s)) + ": " + err.text();
}

}  // namespace attnrt::check
