#include "fixtures.hpp"

#include "isolation.hpp"

#include <attnrt/runtime/backend.hpp>

#include <algorithm>
#include <cstdint>

namespace attnrt::check {

const std::vector<Feature>& features() {
  static const std::vector<Feature> f = {
      {"gqa", ATTNRT_FEATURE_GQA, [](WorkloadSpec& s) { s.heads_kv = 2; }},
      {"causal", ATTNRT_FEATURE_CAUSAL, [](WorkloadSpec& s) { s.causal = true; },
       [](attnrt_attention_desc& d) { d.causal = 0; }},
      {"window", ATTNRT_FEATURE_SLIDING_WINDOW,
       [](WorkloadSpec& s) {
         s.window_left = 12;
         s.window_right = 4;
       },
       [](attnrt_attention_desc& d) { d.window_left = d.window_right = -1; }},
      {"softcap", ATTNRT_FEATURE_SOFTCAP, [](WorkloadSpec& s) { s.softcap = 1.5f; },
       [](attnrt_attention_desc& d) { d.softcap = 0.0f; }},
      {"sinks", ATTNRT_FEATURE_SINKS, [](WorkloadSpec& s) { s.sinks = true; },
       [](attnrt_attention_desc& d) { d.has_sinks = 0; }},
      {"alibi", ATTNRT_FEATURE_ALIBI, [](WorkloadSpec& s) { s.alibi = true; },
       [](attnrt_attention_desc& d) { d.has_alibi = 0; }},
      {"varlen", ATTNRT_FEATURE_VARLEN,
       [](WorkloadSpec& s) {
         s.seqlens_q = {7, 0, 33};
         s.seqlens_k = {9, 5, 40};
       }},
      {"paged", ATTNRT_FEATURE_PAGED_KV,
       [](WorkloadSpec& s) {
         s.paged = true;
         s.page_size = 16;
       }},
      {"paged_varlen_q", ATTNRT_FEATURE_PAGED_VARLEN_Q,
       [](WorkloadSpec& s) {
         s.paged = true;
         s.page_size = 16;
         s.seqlens_q = {7, 0, 33};
         s.seqlens_k = {9, 5, 40};
       }},
      {"head_dim_v", ATTNRT_FEATURE_HEAD_DIM_V, [](WorkloadSpec& s) { s.head_dim_v = s.head_dim / 2; }},
  };
  return f;
}

attnrt_dtype dtype_of_bit(uint32_t bit) {
  return bit == ATTNRT_DTYPE_BIT_FP16   ? ATTNRT_DTYPE_FP16
         : bit == ATTNRT_DTYPE_BIT_BF16 ? ATTNRT_DTYPE_BF16
                                        : ATTNRT_DTYPE_FP32;
}

attnrt_dtype first_dtype(const attnrt_capabilities& caps) { return dtype_of_bit(caps.dtypes & -caps.dtypes); }

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

RawPlugin::RawPlugin(const std::filesystem::path& path) : lib(PluginLibrary::open(path)) {
  attnrt_host_info host{sizeof host, ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR, nullptr, nullptr};
  sdk::MessageBuffer err;
  if (lib->api().create(&host, &inst, err.get()) != ATTNRT_OK)
    throw CheckFailed(std::string("create failed: ") + err.text());
}

RawPlugin::~RawPlugin() {
  if (inst) lib->api().destroy(inst);
}

std::string RawPlugin::unsupported(const attnrt_attention_desc& d) const {
  sdk::MessageBuffer why;
  const attnrt_status s = api().supports(inst, &d, why.get());
  if (s == ATTNRT_OK) return "";
  return !why.empty() ? why.text() : std::string("(no reason given, status ") + status_name(s) + ")";
}

attnrt_exec RawPlugin::exec_for(const attnrt_attention_desc& d, bool backward, std::vector<char>& ws) const {
  size_t bytes = 0;
  sdk::MessageBuffer e;
  if (api().workspace_size(inst, &d, backward ? 1 : 0, 1, &bytes, e.get()) != ATTNRT_OK) bytes = 1 << 20;
  ws.assign(bytes + 256, 0);  // keeps its capacity: repeated calls allocate nothing here
  void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ws.data()) + 255) / 256 * 256);
  return attnrt_exec{sizeof(attnrt_exec), nullptr, bytes ? aligned : nullptr, bytes, 1};
}

attnrt_status RawPlugin::forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, std::vector<char>& ws,
                                 sdk::MessageBuffer& err) const {
  const attnrt_exec exec = exec_for(d, false, ws);
  return api().forward(inst, &d, &a, &exec, err.get());
}

attnrt_status RawPlugin::backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, std::vector<char>& ws,
                                  sdk::MessageBuffer& err) const {
  if (!api().backward) {
    sdk::write_message(err.get(), "the plugin has no backward entry");
    return ATTNRT_ERROR_UNSUPPORTED;
  }
  const attnrt_exec exec = exec_for(d, true, ws);
  return api().backward(inst, &d, &a, &exec, err.get());
}

void report_eager_time_for(const std::filesystem::path& eager, Workload& w, bool backward, int calls) {
  if (eager.empty()) return;
  constexpr int kTimed = 3;
  try {
    RawPlugin baseline(eager);
    if (!baseline.unsupported(w.desc).empty()) return;
    std::vector<char> ws, ws_bwd;
    sdk::MessageBuffer err;
    const attnrt_forward_args fa = w.forward_args();
    const attnrt_backward_args ba = w.backward_args();
    const double t = seconds_of([&] {
      for (int i = 0; i < kTimed; ++i) {
        baseline.forward(w.desc, fa, ws, err);
        if (backward) baseline.backward(w.desc, ba, ws_bwd, err);
      }
    });
    report_kit_time(t);
    report_eager_time(t / kTimed * calls);
  } catch (const std::exception&) {
    // No eager to time: the check runs under the limit's floor alone.
  }
}

}  // namespace attnrt::check
