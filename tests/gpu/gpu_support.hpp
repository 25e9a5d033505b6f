// What the GPU tests share: the GPU and its plugins (skipped, with the reason, where there is
// none), fresh random workloads on it, a backend's errors against the fp64 reference, and
// FlashAttention's rule (gpu.md): a kernel's error at most 2x CUDA eager's in the same dtype,
// plus a small floor; NaN never passes.
#pragma once

#include <attnrt/harness/device_workload.hpp>
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/device.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/registry.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace attnrt::gpu_test {

struct Case {
  std::string name;
  WorkloadSpec spec;
};
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

struct Errors {
  double out = 0, lse = 0, dq = 0, dk = 0, dv = 0, dsinks = 0;
};

class Gpu {
 public:
  static Gpu& get() {
    static Gpu gpu;
    return gpu;
  }
  std::string skip_reason;
  DeviceInfo device;
  std::unique_ptr<Registry> registry;

  std::shared_ptr<Backend> backend(const std::string& name) {
    if (auto it = backends_.find(name); it != backends_.end()) return it->second;
    const PluginRecord* rec = registry->find(name, "cuda");
    if (!rec) throw Error("plugin '" + name + "' for cuda is not installed");
    auto b = std::make_shared<Backend>(registry->load(*rec));
    backends_[name] = b;
    return b;
  }

 private:
  Gpu() {
    const DeviceInventory& inv = probe_devices();
    if (inv.cuda.empty()) {
      skip_reason =
          "no CUDA device here (" + inv.cuda_status + "); GPU tests run on the GPU machine (tools/gpu_suite.sh)";
      return;
    }
    device = inv.cuda.front();
    registry = std::make_unique<Registry>(Registry::default_search_dirs());
    for (const char* name : {"flash_attention_2", "eager"}) {
      const PluginRecord* rec = registry->find(name, "cuda");
      if (!rec || (rec->manifest && rec->manifest->devices != std::vector<std::string>{"cuda"})) {
        skip_reason = std::string("the CUDA plugin '") + name + "' is not built (configure with the CUDA toolkit)";
      }
    }
  }
  std::map<std::string, std::shared_ptr<Backend>> backends_;
};

// A fresh random workload for `spec` whose calls run on the test's GPU.
inline Workload gpu_workload(const Gpu& gpu, const WorkloadSpec& spec) {
  Workload w = make_workload(spec);
  w.desc.device = gpu.device.dl;
  w.desc.cuda_arch = gpu.device.cuda_arch;
  return w;
}

// The forward on w's device copies in dw (outputs poisoned first): its errors in out and lse.
inline Errors forward_errors(Backend& backend, Workload& w, DeviceWorkload& dw, const ReferenceForward& ref) {
  attnrt_forward_args fa = dw.forward_args();
  dw.poison_forward_outputs();
  backend.forward(w.desc, fa, 0);
  dw.download_forward_outputs();
  Errors e;
  e.out = max_abs_error(*w.out.dl(), ref.out);
  e.lse = max_abs_error(*w.lse.dl(), ref.lse);
  return e;
}

// Runs `backend` forward and backward on w (fresh device copies, poisoned outputs) and returns
// its max errors against the fp64 reference.
inline Errors run(Backend& backend, Workload& w, const ReferenceForward& ref, const ReferenceBackward& gref) {
  DeviceWorkload dw(w, w.desc.device);
  Errors e = forward_errors(backend, w, dw, ref);
  attnrt_backward_args ba = dw.backward_args();
  dw.poison_backward_outputs();
  backend.backward(w.desc, ba, 0);
  dw.download_backward_outputs();
  e.dq = max_abs_error(*w.dq.dl(), gref.dq);
  e.dk = max_abs_error(*w.dk.dl(), gref.dk);
  e.dv = max_abs_error(*w.dv.dl(), gref.dv);
  if (w.desc.has_sinks) e.dsinks = max_abs_error(*w.dsinks.dl(), gref.dsinks);
  return e;
}

// The forward alone, on fresh device copies.
inline Errors run_forward(Backend& backend, Workload& w, const ReferenceForward& ref) {
  DeviceWorkload dw(w, w.desc.device);
  return forward_errors(backend, w, dw, ref);
}

// Sets an environment variable for a scope (nullptr: unset), restoring the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    set(value);
  }
  ~ScopedEnv() { set(old_ ? old_->c_str() : nullptr); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void set(const char* value) {
    if (value)
      setenv(name_, value, 1);
    else
      unsetenv(name_);
  }
  const char* name_;
  std::optional<std::string> old_;
};

// The error of dsinks computed the way every flash backward must (FlashAttention-4's learnable-sink
// backward): from D_i = rowsum(dO_i * O_i) with O as a forward stored it (`out`, in the call's
// dtype), summed exactly. CUDA eager keeps its own O in fp32, so its dsinks error is no baseline
// for a kernel that reads the stored O: summed over every row of a head, the rounding of O
// (bf16: 2^-9) dominates. With the reference's O rounded to the dtype this is the error the
// rounding alone brings; with the kernel's own stored O, the error its forward (checked on its
// own under the rule) hands to its backward.
inline double dsinks_error_from_out(const Workload& w, const HostTensor& out, const ReferenceForward& ref,
                                    const ReferenceBackward& gref) {
  const attnrt_attention_desc& d = w.desc;
  const bool varlen = d.is_varlen != 0;
  const int64_t rows = varlen ? w.q.shape()[0] : int64_t(d.batch) * d.seqlen_q;  // query tokens
  const int hq = d.heads_q, dv = d.head_dim_v;
  const float* sinks = static_cast<const float*>(w.sinks.data());
  double worst = 0;
  for (int h = 0; h < hq; ++h) {
    double dsink = 0;
    for (int64_t t = 0; t < rows; ++t) {
      const int64_t lse_at =
          varlen ? int64_t(h) * rows + t : (t / d.seqlen_q * hq + h) * int64_t(d.seqlen_q) + t % d.seqlen_q;
      const double lse = ref.lse[size_t(lse_at)];
      if (std::isinf(lse) && lse < 0) continue;
      double dd = 0;
      for (int c = 0; c < dv; ++c) dd += w.dout.get((t * hq + h) * dv + c) * out.get((t * hq + h) * dv + c);
      dsink -= std::exp(double(sinks[h]) - lse) * dd;
    }
    if (std::isfinite(sinks[h])) worst = std::max(worst, std::abs(dsink - gref.dsinks[size_t(h)]));
  }
  return worst;
}

inline double stored_out_dsinks_error(const Workload& w, const ReferenceForward& ref, const ReferenceBackward& gref) {
  HostTensor out(w.out.shape(), w.out.dtype());  // the reference output, rounded to the dtype
  for (int64_t i = 0; i < out.numel(); ++i) out.set(i, ref.out[size_t(i)]);
  return dsinks_error_from_out(w, out, ref, gref);
}

// FlashAttention's rule: candidate <= 2 * baseline + floor; NaN fails (comparisons are false).
inline void expect_within(const char* what, double candidate, double baseline, double floor) {
  EXPECT_TRUE(candidate <= 2 * baseline + floor)
      << what << ": candidate error " << candidate << " > 2 x eager error " << baseline << " + " << floor;
}

// A spec of random normal inputs; the seed follows from the shape.
inline WorkloadSpec shape(attnrt_dtype dt, int hd, int batch, int sq, int sk, int hq, int hkv) {
  WorkloadSpec s;
  s.dtype = dt;
  s.head_dim = s.head_dim_v = hd;
  s.batch = batch;
  s.seqlen_q = sq;
  s.seqlen_k = sk;
  s.heads_q = hq;
  s.heads_kv = hkv;
  s.seed = static_cast<uint64_t>(hd * 7919 + sq * 31 + sk + hq * 3 + dt);
  return s;
}

}  // namespace attnrt::gpu_test
