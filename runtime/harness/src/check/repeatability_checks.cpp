// threads and deterministic: the same call gives the same bits, whether repeated, or made from
// several threads at once.
#include "checks.hpp"
#include "fixtures.hpp"
#include "isolation.hpp"

#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/runtime/backend.hpp>

#include <fmt/format.h>

#include <cstring>
#include <thread>
#include <vector>

namespace attnrt::check {

// N threads call forward at once on the same inputs with their own outputs and workspaces;
// every result must equal the serial one bit for bit.
std::string check_threads(const std::filesystem::path& lib, int threads, const std::filesystem::path& eager) {
  RawPlugin raw(lib);
  const attnrt_capabilities& caps = raw.lib->capabilities();
  WorkloadSpec spec = base_spec(caps, first_dtype(caps));
  spec.batch = 2;
  spec.seqlen_q = spec.seqlen_k = 96;
  Workload w = cpu_workload(spec, caps);
  if (!raw.unsupported(w.desc).empty()) throw CheckSkipped("the plugin refuses the base call");
  report_eager_time_for(eager, w, false, 1 + 3 * threads);
  attnrt_forward_args serial_args = w.forward_args();
  report_case("the serial call");
  std::vector<char> ws;
  sdk::MessageBuffer err;
  if (raw.forward(w.desc, serial_args, ws, err) != ATTNRT_OK)
    throw CheckFailed(std::string("serial forward failed: ") + err.text());
  std::vector<HostTensor> outs(threads, w.out), lses(threads, w.lse);
  std::vector<std::string> errors(threads);
  std::vector<std::thread> pool;
  report_case(fmt::format("{} threads x 3 calls at once", threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      attnrt_forward_args a = serial_args;
      outs[t].fill_nan();
      a.out = outs[t].dl();
      a.lse = w.desc.return_lse ? lses[t].dl() : nullptr;
      std::vector<char> my_ws;
      sdk::MessageBuffer e;
      for (int rep = 0; rep < 3; ++rep) {
        if (raw.forward(w.desc, a, my_ws, e) != ATTNRT_OK) errors[t] = e.text();
      }
    });
  }
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) {
    if (!errors[t].empty()) throw CheckFailed(fmt::format("thread {}: {}", t, errors[t]));
    if (std::memcmp(outs[t].data(), w.out.data(), w.out.nbytes()) != 0)
      throw CheckFailed(fmt::format("thread {}: out differs from the serial call", t));
  }
  return fmt::format("{} threads x 3 calls agree with the serial call bit for bit", threads);
}

// Repeats with desc.deterministic = 1 are bit-identical (forward, backward).
std::string check_deterministic(const std::filesystem::path& lib, const std::filesystem::path& eager) {
  Backend backend(PluginLibrary::open(lib));
  const attnrt_capabilities& caps = backend.library().capabilities();
  if (!(caps.features & ATTNRT_FEATURE_DETERMINISTIC)) throw CheckSkipped("not advertised");
  WorkloadSpec spec = base_spec(caps, first_dtype(caps));
  if (caps.features & ATTNRT_FEATURE_CAUSAL) spec.causal = true;
  if (caps.features & ATTNRT_FEATURE_GQA) spec.heads_kv = 2;
  Workload w = cpu_workload(spec, caps);
  w.desc.deterministic = 1;
  report_eager_time_for(eager, w, spec.backward, 3);
  attnrt_forward_args fa = w.forward_args();
  std::vector<HostTensor> first;
  for (int rep = 0; rep < 3; ++rep) {
    report_case(fmt::format("repeat {} of 3: forward", rep + 1));
    backend.forward(w.desc, fa, rep == 0 ? 1 : 0);
    std::vector<HostTensor> now = {w.out};
    if (spec.backward) {
      attnrt_backward_args ba = w.backward_args();
      report_case(fmt::format("repeat {} of 3: backward", rep + 1));
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

}  // namespace attnrt::check
