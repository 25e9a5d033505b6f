// What the checks set up before they call a plugin: the features a workload can turn on, the
// small CPU workloads every check starts from, and a plugin instance driven straight through
// its C table.
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/harness/workload.hpp>
#include <attnrt/plugin.hpp>
#include <attnrt/runtime/plugin_library.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace attnrt::check {

// One feature a plugin may advertise, how to turn it on in a workload, and, for features that
// live in the descriptor alone, how to turn it off again on the same tensors (nullptr for GQA,
// varlen, paged, head_dim_v: their tensors differ): what a plugin that ignores it computes.
struct Feature {
  const char* name;
  uint64_t bit;
  void (*enable)(WorkloadSpec&);
  void (*disable)(attnrt_attention_desc&) = nullptr;
};

const std::vector<Feature>& features();

inline constexpr uint32_t kDtypeBits[] = {ATTNRT_DTYPE_BIT_FP32, ATTNRT_DTYPE_BIT_FP16, ATTNRT_DTYPE_BIT_BF16};

attnrt_dtype dtype_of_bit(uint32_t bit);
// The dtype of the lowest dtype bit the plugin advertises: the one checks that need just one use.
attnrt_dtype first_dtype(const attnrt_capabilities& caps);

// A small call inside the plugin's head_dim range, backward and LSE on when advertised.
WorkloadSpec base_spec(const attnrt_capabilities& caps, attnrt_dtype dtype);
Workload cpu_workload(WorkloadSpec spec, const attnrt_capabilities& caps);

// A plugin instance driven straight through its C table (no host-side validation).
struct RawPlugin {
  std::shared_ptr<PluginLibrary> lib;
  attnrt_instance* inst = nullptr;

  explicit RawPlugin(const std::filesystem::path& path);  // throws CheckFailed when create fails
  ~RawPlugin();
  RawPlugin(const RawPlugin&) = delete;
  RawPlugin& operator=(const RawPlugin&) = delete;

  const attnrt_plugin_api& api() const { return lib->api(); }
  // "" when supports() accepts d, else its reason.
  std::string unsupported(const attnrt_attention_desc& d) const;
  // One forward (backward) call on one thread, with a workspace of the size the plugin asks for
  // in `ws`.
  attnrt_status forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, std::vector<char>& ws,
                        sdk::MessageBuffer& err) const;
  attnrt_status backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, std::vector<char>& ws,
                         sdk::MessageBuffer& err) const;

 private:
  attnrt_exec exec_for(const attnrt_attention_desc& d, bool backward, std::vector<char>& ws) const;
};

// Times the runtime's eager plugin (library `eager`) on a few calls like w's (forward, and
// backward when `backward`) and reports its time for `calls` of them (report_eager_time) and the
// timing itself as kit time: what a check's derived time limit is made of. Nothing when `eager`
// is empty, does not load, or refuses the call.
void report_eager_time_for(const std::filesystem::path& eager, Workload& w, bool backward, int calls);

}  // namespace attnrt::check
