// attnrt bench: times named backends on the FlashAttention papers' shapes (bf16, a fixed number
// of tokens split into batch x seqlen, hidden = heads x head_dim; Dao 2023, section 4.1) with
// CUDA events (CPU: wall clock), median of repeats after warm-up, and reports TFLOP/s with
// FLOPs = 4 * batch * heads * seqlen^2 * head_dim forward (halved when causal), backward 2.5x
// forward. Case names match ../shared/bench/torch_sdpa_anchors.py's so the two CSVs join.
// q, k and v are 64 MiB each at the default 16k tokens x 2048 hidden: larger than the H100's
// 50 MiB L2, so repeats do not run from cache and no input rotation is needed.
#include "commands.hpp"
#include "options.hpp"
#include "table.hpp"

#include <attnrt/harness/device_workload.hpp>
#include <attnrt/harness/timing.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/runtime.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace attnrt::cli {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::vector<int> split_ints(const std::string& s, const char* what) {
  std::vector<int> out;
  for (const std::string& x : split(s)) {
    try {
      out.push_back(std::stoi(x));
    } catch (const std::exception&) {
      throw Error(fmt::format("--{}: '{}' is not an integer", what, x));
    }
    if (out.back() <= 0) throw Error(fmt::format("--{}: {} must be positive", what, x));
  }
  return out;
}

// --decode: one decode step (seqlen_q 1, causal) of every sequence over its cached keys, in a
// paged cache (shuffled pages, as make_workload lays them) or a contiguous one (page size 0),
// timed like the rest and reported as effective bandwidth: the K and V bytes the step must read,
// over its time (FlashInfer's and the measure; the H100 copies at about 3.0 TB/s).
int decode_bench(const DeviceInfo& device, const CommonArgs& args, const BenchArgs& b,
                 const std::vector<std::pair<std::string, std::shared_ptr<Backend>>>& backends) {
  const std::vector<int> hdims = split_ints(b.hdims, "hdim");
  const std::vector<int> groups = split_ints(b.gqa, "gqa");
  std::vector<int> pages;
  for (const std::string& x : split(b.page_sizes)) pages.push_back(x == "0" ? 0 : split_ints(x, "page-size")[0]);
  std::vector<std::pair<int, int>> shapes;
  for (const std::string& x : split(b.decode_shapes)) {
    const size_t at = x.find('x');
    if (at == std::string::npos) throw Error("--decode-shapes: '" + x + "' is not <batch>x<keys>");
    shapes.emplace_back(split_ints(x.substr(0, at), "decode-shapes")[0],
                        split_ints(x.substr(at + 1), "decode-shapes")[0]);
  }
  const int heads_kv = b.heads_kv > 0 ? b.heads_kv : 8;
  nlohmann::json rows = nlohmann::json::array();
  Table table({"CASE", "BACKEND", "ms", "TB/s"});
  std::ofstream csv;
  if (!b.csv.empty()) {
    csv.open(b.csv);
    if (!csv) throw Error("cannot write " + b.csv);
    csv << "case,backend,pass,ms,tbps,note\n";
  }
  fmt::print(stderr, "attnrt bench --decode on {} ({}), {}, {} KV heads\n", device.label(), device.name, b.dtype,
             heads_kv);
  for (int hd : hdims) {
    for (const auto& [batch, keys] : shapes) {
      for (int group : groups) {
        for (int page : pages) {
          WorkloadSpec spec;
          spec.dtype = parse_dtype(b.dtype);
          spec.batch = batch;
          spec.seqlen_q = 1;
          spec.seqlen_k = keys;
          spec.heads_kv = heads_kv;
          spec.heads_q = heads_kv * group;
          spec.head_dim = spec.head_dim_v = hd;
          spec.causal = true;
          spec.window_left = b.window_left;
          spec.sinks = b.sinks;
          spec.paged = page > 0;
          if (page > 0) spec.page_size = page;
          spec.backward = false;
          spec.seed = 1;
          Workload w = make_workload(spec);
          w.desc.device = device.dl;
          w.desc.cuda_arch = device.cuda_arch;
          DeviceWorkload dw(w, device.dl);
          const double kv_bytes =
              2.0 * batch * double(keys) * heads_kv * hd * (spec.dtype == ATTNRT_DTYPE_FP32 ? 4 : 2);
          std::string id = fmt::format("decode_D{}_B{}_K{}_H{}_KV{}_{}", hd, batch, keys, spec.heads_q, heads_kv,
                                       page > 0 ? fmt::format("page{}", page) : std::string("contiguous"));
          if (b.window_left >= 0) id += fmt::format("_W{}", b.window_left);
          if (b.sinks) id += "_sinks";
          for (auto& [name, backend] : backends) {
            std::string why = backend->unsupported_reason(w.desc);
            double ms = 0;
            if (why.empty()) {
              try {
                attnrt_forward_args fa = dw.forward_args();
                ms = median_call_ms(device.dl, nullptr, b.warmup, b.iterations,
                                    [&] { backend->forward(w.desc, fa, 0); });
              } catch (const Error& e) {
                why = e.what();
              }
            }
            const double tbps = why.empty() ? kv_bytes / (ms * 1e-3) / 1e12 : 0.0;
            rows.push_back({{"case", id}, {"backend", name}, {"ms", ms}, {"tbps", tbps}, {"note", why}});
            table.add({id, name, why.empty() ? fmt::format("{:.4f}", ms) : "-",
                       why.empty() ? fmt::format("{:.3f}", tbps) : "n/a: " + why});
            if (csv) csv << fmt::format("{},{},fwd,{:.5f},{:.4f},\"{}\"\n", id, name, ms, tbps, why);
          }
        }
      }
    }
  }
  if (args.json) {
    fmt::print("{}\n", nlohmann::json{{"device", device.name}, {"rows", rows}}.dump(2));
  } else {
    table.print();
  }
  return 0;
}

}  // namespace

int bench_command(const CommonArgs& args, const BenchArgs& b) {
  Runtime rt(runtime_options(args));
  const DeviceInfo device = rt.resolver().device();
  const bool cuda = device.dl.device_type == kDLCUDA;
  const std::string device_word = cuda ? "cuda" : "cpu";
  const std::vector<int> hdims = split_ints(b.hdims, "hdim"), seqlens = split_ints(b.seqlens, "seqlen");
  const attnrt_dtype dtype = parse_dtype(b.dtype);
  std::vector<bool> masks;
  if (b.masks == "both" || b.masks == "none") masks.push_back(false);
  if (b.masks == "both" || b.masks == "causal") masks.push_back(true);
  if (masks.empty()) throw Error("--mask must be none, causal or both, got '" + b.masks + "'");

  // One Backend per name, exactly that plugin (no fallback: a benchmark times what it names).
  std::vector<std::pair<std::string, std::shared_ptr<Backend>>> backends;
  for (const std::string& name : split(b.backends)) {
    const PluginRecord* rec = rt.registry().find(name, device_word);
    if (!rec) throw Error(fmt::format("--backends: no plugin named '{}' is installed", name));
    backends.emplace_back(name, std::make_shared<Backend>(rt.registry().load(*rec)));
  }
  if (b.decode) return decode_bench(device, args, b, backends);

  nlohmann::json rows = nlohmann::json::array();
  Table table({"CASE", "BACKEND", "PASS", "ms", "TFLOP/s"});
  std::ofstream csv;
  if (!b.csv.empty()) {
    csv.open(b.csv);
    if (!csv) throw Error("cannot write " + b.csv);
    csv << "case,backend,pass,ms,tflops,note\n";
  }
  fmt::print(stderr, "attnrt bench on {} ({}), {} tokens, hidden {}, {}\n", device.label(), device.name, b.tokens,
             b.hidden, b.dtype);
  for (int hd : hdims) {
    for (int seqlen : seqlens) {
      if (b.tokens % seqlen != 0 || b.hidden % hd != 0) {
        throw Error(fmt::format("--tokens {} / --hidden {} must divide by seqlen {} / head_dim {}", b.tokens, b.hidden,
                                seqlen, hd));
      }
      for (bool causal : masks) {
        WorkloadSpec spec;
        spec.dtype = dtype;
        spec.batch = b.tokens / seqlen;
        spec.seqlen_q = spec.seqlen_k = seqlen;
        spec.heads_q = spec.heads_kv = b.hidden / hd;
        if (b.heads_kv > 0) {
          if (spec.heads_q % b.heads_kv != 0) {
            throw Error(fmt::format("--heads-kv {} must divide the {} query heads", b.heads_kv, spec.heads_q));
          }
          spec.heads_kv = b.heads_kv;
        }
        spec.head_dim = spec.head_dim_v = hd;
        spec.causal = causal;
        spec.window_left = b.window_left;
        spec.sinks = b.sinks;
        spec.seed = 1;
        Workload w = make_workload(spec);
        w.desc.device = device.dl;
        w.desc.cuda_arch = device.cuda_arch;
        w.desc.deterministic = b.deterministic ? 1 : 0;
        DeviceWorkload dw(w, device.dl);
        // The papers' count (causal: half the square), as the PyTorch anchors count; a window
        // counts the (query, key) pairs it leaves visible.
        const double flops =
            b.window_left >= 0 ? w.forward_flops
                               : 4.0 * spec.batch * spec.heads_q * double(seqlen) * seqlen * hd * (causal ? 0.5 : 1.0);
        std::string base =
            fmt::format("D{}_S{}_B{}_H{}_{}", hd, seqlen, spec.batch, spec.heads_q, causal ? "causal" : "full");
        if (spec.heads_kv != spec.heads_q) base += fmt::format("_KV{}", spec.heads_kv);
        if (b.window_left >= 0) base += fmt::format("_W{}", b.window_left);
        if (b.sinks) base += "_sinks";
        for (auto& [name, backend] : backends) {
          auto time = [&](const std::function<void()>& fn) {
            return median_call_ms(device.dl, nullptr, b.warmup, b.iterations, fn);
          };
          for (const char* pass : {"fwd", "bwd"}) {
            const bool bwd = pass[0] == 'b';
            if ((bwd && !b.backward) || (!bwd && !b.forward)) continue;
            const std::string id = base + "_" + pass;
            nlohmann::json row = {{"case", id}, {"backend", name}};
            std::string why = backend->unsupported_reason(w.desc);
            if (why.empty() && bwd && !backend->has_backward()) why = "no backward";
            double ms = 0;
            if (why.empty()) {
              try {
                attnrt_forward_args fa = dw.forward_args();
                attnrt_backward_args ba = dw.backward_args();
                backend->forward(w.desc, fa, 0);  // backward reads out and lse
                ms = bwd ? time([&] { backend->backward(w.desc, ba, 0); })
                         : time([&] { backend->forward(w.desc, fa, 0); });
              } catch (const Error& e) {
                why = e.what();
              }
            }
            const double tflops = why.empty() ? (bwd ? 2.5 : 1.0) * flops / (ms * 1e-3) / 1e12 : 0.0;
            row["ms"] = ms;
            row["tflops"] = tflops;
            row["note"] = why;
            rows.push_back(row);
            table.add({id, name, pass, why.empty() ? fmt::format("{:.3f}", ms) : "-",
                       why.empty() ? fmt::format("{:.1f}", tflops) : "n/a: " + why});
            if (csv) csv << fmt::format("{},{},{},{:.4f},{:.2f},\"{}\"\n", id, name, pass, ms, tflops, why);
          }
        }
      }
    }
  }
  if (args.json) {
    fmt::print("{}\n", nlohmann::json{{"device", device.name}, {"rows", rows}}.dump(2));
  } else {
    table.print();
  }
  return 0;
}

}  // namespace attnrt::cli
