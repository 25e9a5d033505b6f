// attnrt bench: times named backends on the FlashAttention papers' shapes (bf16, a fixed number
// of tokens split into batch x seqlen, hidden = heads x head_dim; Dao 2023, section 4.1) with
// CUDA events (CPU: wall clock), median of repeats after warm-up, and reports TFLOP/s with
// FLOPs = 4 * batch * heads * seqlen^2 * head_dim forward (halved when causal), backward 2.5x
// forward. Case names match ../shared/bench/torch_sdpa_anchors.py's so the two CSVs join.
// q, k and v are 64 MiB each at the default 16k tokens x 2048 hidden: larger than the H100's
// 50 MiB L2, so repeats do not run from cache and no input rotation is needed.
// flex_attention mods (issue 15): with a config whose attnrt.flex gives a site's mods (the only
// one, or the one --flex-site names), every case carries them, with the block mask built for the
// case's shape, and its TFLOP/s count the (query, key) pairs mask_mod and the case's own mask
// leave visible, exactly (FlexCall::visible_pairs), as the PyTorch numbers do.
#include "bench_support.hpp"
#include "commands.hpp"
#include "options.hpp"
#include "table.hpp"

#include <attnrt/harness/device_workload.hpp>
#include <attnrt/harness/flex_config.hpp>
#include <attnrt/harness/timing.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/cuda_memory.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/runtime.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>

namespace attnrt::cli {
namespace {

// --decode: one decode step (seqlen_q 1, causal) of every sequence over its cached keys, in a
// paged cache (shuffled pages) or a contiguous one (page size 0), reported as effective
// bandwidth: the K and V bytes the step must read, over its time (FlashInfer's and the issue's
// measure; the H100 copies at about 3.0 TB/s).
//   - Inputs: the K/V cache of a (head_dim, shape) is generated once, a random block tiled over
//     device buffers, and shared by its GQA ratios and page sizes (the same bytes as
//     [pages, page_size, heads_kv, head_dim] or [batch, keys, heads_kv, head_dim], or with
//     --kv-layout hnd each page or sequence as [heads_kv, tokens, head_dim]); q, out, lse,
//     the block table and seqused_k are per case and small. (Building each case's gigabyte cache
//     on the host in fp64, with backward tensors, took over 90 s before a row came out.)
//   - Timing: cuda_median_ms_cold_l2, the L2 cleared before every call and the host's launch
//     work hidden behind the clear, as bench/torch_decode_anchors.py's triton do_bench times
//     PyTorch's backends, so the two CSVs compare like for like.
//   - Rows go to the CSV (and a line to stderr) as each case finishes.
struct DecodeCache {
  CudaBuffer k, v;
};

DecodeCache make_decode_cache(DLDevice device, DLDataType dt, size_t elements, uint64_t seed) {
  // A random block repeated over the cache: the values only need to be realistic scores, the
  // addresses are what the benchmark measures.
  const HostTensor block = random_block(dt, seed);
  const size_t bytes = elements * (block.nbytes() / size_t(block.numel()));
  DecodeCache c{CudaBuffer(device, bytes), CudaBuffer(device, bytes)};
  upload_repeating(c.k, block);
  // V starts at another offset into the block than K, so the two are not the same values.
  upload_repeating(c.v, block, block.numel() / 3);
  return c;
}

int decode_bench(const DeviceInfo& device, const CommonArgs& args, const BenchArgs& b,
                 const std::vector<std::pair<std::string, std::shared_ptr<Backend>>>& backends) {
  if (device.dl.device_type != kDLCUDA) throw Error("attnrt bench --decode times CUDA plugins: set attnrt.device=cuda");
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
  const std::vector<std::string> layouts = split(b.kv_layouts);
  for (const std::string& l : layouts) {
    if (l != "nhd" && l != "hnd") throw Error("--kv-layout: '" + l + "' is not nhd or hnd");
  }
  const int heads_kv = b.heads_kv > 0 ? b.heads_kv : 8;
  const attnrt_dtype dtype = parse_dtype(b.dtype);
  const DLDataType dt = dl_dtype_of(dtype);
  const int eb = dtype == ATTNRT_DTYPE_FP32 ? 4 : 2;
  nlohmann::json rows = nlohmann::json::array();
  Table table({"CASE", "BACKEND", "ms", "TB/s"});
  std::ofstream csv;
  if (!b.csv.empty()) {
    csv.open(b.csv);
    if (!csv) throw Error("cannot write " + b.csv);
    csv << "case,backend,pass,ms,tbps,note\n" << std::flush;
  }
  fmt::print(stderr, "attnrt bench --decode on {} ({}), {}, {} KV heads, L2 cleared before each call\n", device.label(),
             device.name, b.dtype, heads_kv);
  CudaBuffer flush(device.dl, size_t(256) << 20);  // triton do_bench's 256 MB, 5x the H100's L2
  for (int hd : hdims) {
    for (const auto& [batch, keys] : shapes) {
      // Token rows the largest layout needs: pages round each sequence up to whole pages.
      int64_t cache_rows = 0;
      for (int page : pages) {
        cache_rows = std::max<int64_t>(
            cache_rows, page > 0 ? int64_t(batch) * ((keys + page - 1) / page) * page : int64_t(batch) * keys);
      }
      const DecodeCache cache = make_decode_cache(device.dl, dt, size_t(cache_rows) * heads_kv * hd, 1);
      const double kv_bytes = 2.0 * batch * double(keys) * heads_kv * hd * eb;
      for (int group : groups) {
        for (const std::string& layout : layouts) {
          for (int page : pages) {
            Workload w;
            attnrt_attention_desc& d = w.desc;
            d.struct_size = sizeof d;
            d.dtype = dtype;
            d.head_dim = d.head_dim_v = hd;
            d.heads_q = heads_kv * group;
            d.heads_kv = heads_kv;
            d.batch = batch;
            d.seqlen_q = 1;
            d.seqlen_k = keys;
            d.softmax_scale = 1.0f / std::sqrt(float(hd));
            d.causal = 1;
            d.window_left = b.window_left;
            d.window_right = -1;
            d.return_lse = 1;
            d.device = device.dl;
            d.cuda_arch = device.cuda_arch;
            std::mt19937_64 rng(uint64_t(batch) * 1000003u + uint64_t(group) * 101u + uint64_t(page));
            w.total_q = batch;
            w.q = HostTensor({batch, 1, d.heads_q, hd}, dt);
            w.q.fill_normal(rng);
            w.out = HostTensor({batch, 1, d.heads_q, hd}, dt);
            w.lse = HostTensor({batch, d.heads_q, 1}, dl_float32());
            if (b.sinks) {
              d.has_sinks = 1;
              w.sinks = HostTensor({d.heads_q}, dl_float32());
              w.sinks.fill_normal(rng);
            }
            std::vector<int64_t> cache_shape = {batch, keys, heads_kv, hd};
            if (page > 0) {
              // Every sequence's pages, shuffled over the cache so the block table really indirects.
              d.is_paged = 1;
              d.page_size = page;
              const int64_t per_seq = (keys + page - 1) / page;
              std::vector<int32_t> order(size_t(per_seq * batch));
              std::iota(order.begin(), order.end(), 0);
              std::shuffle(order.begin(), order.end(), rng);
              w.block_table = HostTensor({batch, per_seq}, dl_int32());
              std::copy(order.begin(), order.end(), w.block_table.data_as<int32_t>());
              w.seqused_k = HostTensor({batch}, dl_int32());
              std::fill_n(w.seqused_k.data_as<int32_t>(), batch, keys);
              cache_shape = {per_seq * batch, page, heads_kv, hd};
            }
            DeviceWorkload dw(w, device.dl);  // q, out, lse, sinks, block table, seqused_k
            // hnd: each page (sequence) holds [heads_kv, tokens, head_dim]; the view stays
            // [pages, tokens, heads_kv, head_dim] with the head and token strides swapped.
            const int64_t tokens = cache_shape[1];
            std::vector<int64_t> strides = {tokens * heads_kv * hd, hd, tokens * hd, 1};
            DLTensor k_view{}, v_view{};
            for (auto [view, buf] : {std::pair{&k_view, &cache.k}, std::pair{&v_view, &cache.v}}) {
              view->data = buf->data();
              view->device = device.dl;
              view->ndim = 4;
              view->dtype = dt;
              view->shape = cache_shape.data();
              view->strides = layout == "hnd" ? strides.data() : nullptr;
            }
            std::string id = fmt::format("decode_D{}_B{}_K{}_H{}_KV{}_{}", hd, batch, keys, d.heads_q, heads_kv,
                                         page > 0 ? fmt::format("page{}", page) : std::string("contiguous"));
            if (layout == "hnd") id += "_hnd";
            if (b.window_left >= 0) id += fmt::format("_W{}", b.window_left);
            if (b.sinks) id += "_sinks";
            for (auto& [name, backend] : backends) {
              std::string why = backend->unsupported_reason(d);
              double ms = 0;
              if (why.empty()) {
                try {
                  attnrt_forward_args fa = dw.forward_args();
                  fa.k = &k_view;
                  fa.v = &v_view;
                  ms = cuda_median_ms_cold_l2(
                      device.dl, nullptr, b.warmup, b.iterations, [&] { backend->forward(d, fa, 0); }, flush);
                } catch (const Error& e) {
                  why = e.what();
                }
              }
              const double tbps = why.empty() ? kv_bytes / (ms * 1e-3) / 1e12 : 0.0;
              rows.push_back({{"case", id}, {"backend", name}, {"ms", ms}, {"tbps", tbps}, {"note", why}});
              table.add({id, name, why.empty() ? fmt::format("{:.4f}", ms) : "-",
                         why.empty() ? fmt::format("{:.3f}", tbps) : "n/a: " + why});
              if (csv) csv << fmt::format("{},{},fwd,{:.5f},{:.4f},\"{}\"\n", id, name, ms, tbps, why) << std::flush;
              fmt::print(stderr, "{} {} {}\n", id, name,
                         why.empty() ? fmt::format("{:.3f} TB/s", tbps) : "n/a: " + why);
            }
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
  // Before any CUDA work: its launcher starts one process per GPU.
  if (b.context_parallel > 0) return context_parallel_bench(args, b);
  Runtime rt(runtime_options(args));
  use_config_log_level(rt);
  const DeviceInfo device = rt.resolver().device();
  const bool cuda = device.dl.device_type == kDLCUDA;
  const std::string device_word = cuda ? "cuda" : "cpu";
  const std::vector<int> hdims = split_ints(b.hdims, "hdim"), seqlens = split_ints(b.seqlens, "seqlen");
  const attnrt_dtype dtype = parse_dtype(b.dtype);
  std::vector<bool> masks;
  if (b.masks == "both" || b.masks == "none") masks.push_back(false);
  if (b.masks == "both" || b.masks == "causal") masks.push_back(true);
  if (masks.empty()) throw Error("--mask must be none, causal or both, got '" + b.masks + "'");

  // The flex mods the cases carry: attnrt.flex.<--flex-site>, or the config's only flex site.
  std::vector<std::string> site_names;
  for (const Site& site : rt.sites().sites) site_names.push_back(site.name);
  const FlexSpecs flex_specs = read_flex(rt.config(), site_names);
  const FlexSiteSpec* flex_spec = nullptr;
  if (!b.flex_site.empty()) {
    auto it = flex_specs.find(b.flex_site);
    if (it == flex_specs.end()) {
      std::string have;
      for (const auto& [name, spec] : flex_specs) have += (have.empty() ? "" : ", ") + name;
      throw Error(fmt::format("--flex-site {}: the configuration gives no attnrt.flex.{} (flex sites: {})", b.flex_site,
                              b.flex_site, have.empty() ? "none" : have));
    }
    flex_spec = &it->second;
  } else if (flex_specs.size() == 1) {
    flex_spec = &flex_specs.begin()->second;
  } else if (flex_specs.size() > 1) {
    std::string have;
    for (const auto& [name, spec] : flex_specs) have += (have.empty() ? "" : ", ") + name;
    throw Error(
        fmt::format("the configuration gives flex mods for several sites ({}): name one with --flex-site", have));
  }
  if (flex_spec && b.decode) throw Error("attnrt bench --decode does not take flex mods (attnrt.flex)");
  if (flex_spec) {
    fmt::print(stderr, "flex_attention mods of attnrt.flex.{} ({}): {}\n", flex_spec->site, flex_spec->where,
               flex_spec->summary());
  }

  // One Backend per name, exactly that plugin (no fallback: a benchmark times what it names).
  std::vector<std::pair<std::string, std::shared_ptr<Backend>>> backends;
  const std::string backend_names = b.backends_given || !flex_spec ? b.backends : std::string("flex_attention");
  for (const std::string& name : split(backend_names)) {
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
      // heads = hidden / head_dim rounded down, as FlashAttention's benchmark (and
      // bench/torch_sdpa_anchors.py) count them: 2048 at head_dim 96 is 21 heads.
      if (b.tokens % seqlen != 0 || b.hidden < hd) {
        throw Error(fmt::format("--tokens {} must divide by seqlen {}, and --hidden {} hold at least one head of {}",
                                b.tokens, seqlen, b.hidden, hd));
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
        // Drawing all of q, k, v and dout took 4-7 s a case on the host (16k tokens, hidden
        // 2048), more than the kernels' timing; a repeated 4 Mi-element block gives the same
        // score statistics for the clock.
        spec.fill_period = int64_t(1) << 22;
        Workload w = make_workload(spec);
        w.desc.device = device.dl;
        w.desc.cuda_arch = device.cuda_arch;
        w.desc.deterministic = b.deterministic ? 1 : 0;
        DeviceWorkload dw(w, device.dl);
        // This shape's flex block (mods compiled, block mask built); a failure (an aux tensor
        // that does not cover the shape, say) is every backend's note for the case.
        std::unique_ptr<FlexCall> flex;
        std::string flex_error;
        if (flex_spec) {
          try {
            flex = std::make_unique<FlexCall>(*flex_spec, w);
            flex->attach(w.desc, device.dl);
          } catch (const Error& e) {
            flex_error = e.what();
          }
        }
        // The papers' count (causal: half the square), as the PyTorch anchors count; a window
        // counts the (query, key) pairs it leaves visible, and flex mods the pairs they do.
        const double flops = flex                 ? flex->forward_flops()
                             : b.window_left >= 0 ? w.forward_flops
                                                  : 4.0 * spec.batch * spec.heads_q * double(seqlen) * seqlen * hd *
                                                        (causal ? 0.5 : 1.0);
        std::string base =
            fmt::format("D{}_S{}_B{}_H{}_{}", hd, seqlen, spec.batch, spec.heads_q, causal ? "causal" : "full");
        if (spec.heads_kv != spec.heads_q) base += fmt::format("_KV{}", spec.heads_kv);
        if (b.window_left >= 0) base += fmt::format("_W{}", b.window_left);
        if (b.sinks) base += "_sinks";
        if (flex_spec) base += "_flex";
        for (auto& [name, backend] : backends) {
          auto time = [&](const std::function<void()>& fn) {
            return median_call_ms(device.dl, nullptr, b.warmup, b.iterations, fn);
          };
          for (const char* pass : {"fwd", "bwd"}) {
            const bool bwd = pass[0] == 'b';
            if ((bwd && !b.backward) || (!bwd && !b.forward)) continue;
            const std::string id = base + "_" + pass;
            nlohmann::json row = {{"case", id}, {"backend", name}};
            std::string why = flex_spec && !flex ? flex_error : backend->unsupported_reason(w.desc);
            if (why.empty() && bwd && !backend->has_backward()) why = "no backward";
            if (why.empty() && bwd && flex) why = flex->backward_refusal();
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
            // Flushed per row, so a run cut short by a time limit keeps the cases it finished.
            if (csv)
              csv << fmt::format("{},{},{},{:.4f},{:.2f},\"{}\"\n", id, name, pass, ms, tflops, why) << std::flush;
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
