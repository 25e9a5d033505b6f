// flex_attention's forward on CUDA against PyTorch's compiled flex_attention (the issue-15 mods,
// bench/torch_flex_anchors.py times the same ones) and against flash_attention_2 /
// flash_attention_3 on their built-in causal mask. Each mod is its source text for attnrt and
// the same rule as C++ here, from which the block mask is built the way PyTorch's
// create_block_mask builds it (128 x 128 blocks: none visible: skipped; all: full; else
// partial) and the visible pairs are counted. TFLOP/s = 4 * batch * heads * visible pairs *
// head_dim / time (FlashAttention's convention, over the pairs the mask leaves); with --backward 1
// also each backward alone (after a forward), 2.5 times the forward's FLOPs: 10 * batch * heads
// * visible pairs * head_dim / time, rows named <backend>_backward. With --block-mask 1, instead,
// create_block_mask on the GPU (ABI 1.4) for each mod's mask_mod at each seqlen, broadcast over
// sequences and heads, every list asked for, 128 x 128 blocks: rows
// flex_attention_create_block_mask (ms; note: whether its lists equal the host's). Forward rows'
// notes give the host's side of a call (host_us: the time the call takes to return) and the
// GPU's (pipelined_ms: calls enqueued back to back, per call).
//   attnrt_flex_bench [--hdim 64,128] [--seqlen 2048,8192] [--heads 16] [--batch 2] [--backward 1]
//                     [--block-mask 1] [--mods causal,dense,...] [--reps 10] [--csv file]
// --mods runs only the named mods (the built-in causal rows always run); --reps sets the timed
// calls per median.
#include <attnrt/harness/device_tensor.hpp>
#include <attnrt/harness/device_workload.hpp>
#include <attnrt/harness/timing.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/device.hpp>
#include <attnrt/runtime/registry.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace attnrt {
namespace {

struct Mod {
  std::string name;
  std::string score_mod, mask_mod;
  std::function<bool(int64_t, int64_t)> visible;  // (q_idx, kv_idx), the same rule as mask_mod
  bool needs_slopes = false, needs_table = false, needs_docs = false;
  std::string score_mod_grad = "";  // d score_mod / d score, for --backward
};

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) v.push_back(part);
  return v;
}

std::vector<int> split_ints(const std::string& s) {
  std::vector<int> v;
  for (const std::string& part : split_names(s)) v.push_back(std::stoi(part));
  return v;
}

std::vector<int32_t> documents(int seqlen) {
  // Documents of 1/16, 2/16, 3/16, 4/16 of the sequence, repeating (torch_flex_anchors.py: the same).
  std::vector<int32_t> doc(seqlen);
  int id = 0, at = 0;
  while (at < seqlen) {
    const int len = seqlen / 16 * (1 + id % 4);
    for (int i = at; i < std::min(seqlen, at + len); ++i) doc[i] = id;
    at += len;
    ++id;
  }
  return doc;
}

std::vector<Mod> mods(int seqlen, const std::vector<int32_t>& doc) {
  const auto causal = [](int64_t q, int64_t k) { return q >= k; };
  const std::string prefix = std::to_string(seqlen / 4), table_center = std::to_string(seqlen - 1);
  return {
      {"causal", "", "q_idx >= kv_idx", causal},
      {"sliding_window_256", "", "q_idx >= kv_idx && q_idx - kv_idx < 256",
       [](int64_t q, int64_t k) { return q >= k && q - k < 256; }},
      {"prefix_lm", "", "kv_idx < " + prefix + " || q_idx >= kv_idx",
       [seqlen](int64_t q, int64_t k) { return k < seqlen / 4 || q >= k; }},
      {"document_mask", "", "aux0(q_idx) == aux0(kv_idx) && q_idx >= kv_idx",
       [&doc](int64_t q, int64_t k) { return doc[q] == doc[k] && q >= k; }, false, false, true},
      {"alibi", "score + aux0(h) * (kv_idx - q_idx)", "q_idx >= kv_idx", causal, true, false, false, "1.0f"},
      {"softcap", "20.0f * tanhf(score * 0.05f)", "q_idx >= kv_idx", causal, false, false, false,
       "1.0f - tanhf(score * 0.05f) * tanhf(score * 0.05f)"},
      {"relative_bias", "score + aux0(h, q_idx - kv_idx + " + table_center + ")", "q_idx >= kv_idx", causal, false,
       true, false, "1.0f"},
      // Issue 15's block-sparse bar: every 128 x 128 block visible (dense), and a tenth of them
      // (a fixed hash of the block's coordinates), each kept block whole, so the block mask lists
      // it as full and mask_mod is never evaluated; the time ratio is the sparsity's speedup.
      {"dense", "", "true", [](int64_t, int64_t) { return true; }},
      // Causal by 128 x 128 blocks: the causal mask's blocks, every one full (mask_mod never
      // evaluated), the diagonal ones whole. Against `causal` it prices the diagonal blocks'
      // mask_mod; against flash_attention_3's causal, the rest of the flex machinery.
      {"block_causal", "", "q_idx / 128 >= kv_idx / 128", [](int64_t q, int64_t k) { return q / 128 >= k / 128; }},
      {"block_sparse_90", "", "((q_idx / 128) * 7919 + (kv_idx / 128) * 104729) % 10 == 0",
       [](int64_t q, int64_t k) { return ((q / 128) * 7919 + (k / 128) * 104729) % 10 == 0; }},
  };
}

struct BlockMask {
  HostTensor num, idx, full_num, full_idx;
  double visible_pairs = 0;
};

// The host's side of one call: the median time fn() takes to return (the launches are
// asynchronous, so this is the argument checks, the lookups and the enqueues, what a call costs a
// host that does not wait for it), over 50 calls with the stream drained every 10.
double host_us(DLDevice device, const std::function<void()>& fn) {
  std::vector<double> us;
  for (int i = 0; i < 50; ++i) {
    if (i % 10 == 0) cuda_synchronize(device);
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  cuda_synchronize(device);
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

// The GPU's side: 20 calls enqueued back to back between two events, per call (the host runs
// ahead, so its time is hidden unless it is longer than the GPU's).
double pipelined_ms(DLDevice device, const std::function<void()>& fn) {
  fn();
  return cuda_median_ms(device, nullptr, 1, 3,
                        [&] {
                          for (int i = 0; i < 20; ++i) fn();
                        }) /
         20;
}

BlockMask block_mask(const Mod& m, int seqlen) {
  constexpr int kBlock = 128;
  const int nb = (seqlen + kBlock - 1) / kBlock;
  const DLDataType i32{kDLInt, 32, 1};
  BlockMask bm{HostTensor({1, 1, nb}, i32), HostTensor({1, 1, nb, nb}, i32), HostTensor({1, 1, nb}, i32),
               HostTensor({1, 1, nb, nb}, i32)};
  bm.idx.fill(0);
  bm.full_idx.fill(0);
  for (int qb = 0; qb < nb; ++qb) {
    int partial = 0, full = 0;
    for (int kb = 0; kb < nb; ++kb) {
      int64_t seen = 0, total = 0;
      for (int64_t q = qb * kBlock; q < std::min(seqlen, (qb + 1) * kBlock); ++q) {
        for (int64_t k = kb * kBlock; k < std::min(seqlen, (kb + 1) * kBlock); ++k) {
          seen += m.visible(q, k);
          ++total;
        }
      }
      bm.visible_pairs += double(seen);
      if (seen == total)
        bm.full_idx.set(qb * nb + full++, kb);
      else if (seen > 0)
        bm.idx.set(qb * nb + partial++, kb);
    }
    bm.num.set(qb, partial);
    bm.full_num.set(qb, full);
  }
  return bm;
}

// create_block_mask on the GPU for every mod with a mask_mod at one seqlen: broadcast (B = H = 1),
// all eight lists, 128 x 128 blocks, the module compiled (or loaded) by a first call; each list
// compared with the host's classification (block_mask above) once.
template <class Row>
void time_block_masks(Backend& flex, const DeviceInfo& gpu, int seqlen, const Row& row) {
  const std::vector<int32_t> doc = documents(seqlen);
  HostTensor docs({seqlen}, DLDataType{kDLInt, 32, 1});
  for (int i = 0; i < seqlen; ++i) docs.set(i, doc[i]);
  DeviceTensor d_docs(docs, gpu.dl);
  const int nb = (seqlen + 127) / 128;
  const DLDataType i32{kDLInt, 32, 1};
  for (const Mod& m : mods(seqlen, doc)) {
    if (!m.score_mod.empty() || m.name == "dense") continue;  // the score mods' mask is causal's
    std::vector<HostTensor> host;
    for (int p = 0; p < 4; ++p) {
      host.emplace_back(std::vector<int64_t>{1, 1, nb}, i32);
      host.emplace_back(std::vector<int64_t>{1, 1, nb, nb}, i32);
    }
    std::vector<DeviceTensor> out;
    for (HostTensor& t : host) {
      t.fill(-1);
      out.emplace_back(t, gpu.dl);
    }
    const DLTensor* aux[1] = {d_docs.dl()};
    attnrt_flex_attention block{};
    block.header = {sizeof block, ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION, 0, nullptr};
    block.mask_mod = m.mask_mod.c_str();
    block.source_name = "attnrt_flex_bench";
    block.num_aux = m.needs_docs ? 1 : 0;
    block.aux = aux;
    block.q_block_size = block.kv_block_size = 128;
    attnrt_attention_desc d{};
    d.struct_size = sizeof d;
    d.dtype = ATTNRT_DTYPE_BF16;
    d.head_dim = d.head_dim_v = 128;
    d.heads_q = d.heads_kv = 1;
    d.batch = 1;
    d.seqlen_q = d.seqlen_k = seqlen;
    d.softmax_scale = 1.0f;
    d.window_left = d.window_right = -1;
    d.device = gpu.dl;
    d.cuda_arch = gpu.cuda_arch;
    d.extensions = &block.header;
    attnrt_block_mask_args a{sizeof a,    out[0].dl(), out[1].dl(), out[2].dl(), out[3].dl(),
                             out[4].dl(), out[5].dl(), out[6].dl(), out[7].dl()};
    const attnrt_exec exec{sizeof exec, nullptr, nullptr, 0, 0};
    const auto start = std::chrono::steady_clock::now();
    flex.create_block_mask(d, a, exec);
    cuda_synchronize(gpu.dl);
    const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    // The host's classification evaluates every pair on one core: compared up to 8k tokens.
    const bool compare = seqlen <= 8192;
    const BlockMask want = compare ? block_mask(m, seqlen) : BlockMask{};
    for (int t = 0; t < 4; ++t) out[size_t(t)].download(host[size_t(t)]);
    bool same = true;
    for (int qb = 0; compare && qb < nb && same; ++qb) {
      same = host[0].get(qb) == want.num.get(qb) && host[2].get(qb) == want.full_num.get(qb);
      for (int e = 0; e < nb && same; ++e) {
        same = (e >= want.num.get(qb) || host[1].get(qb * nb + e) == want.idx.get(qb * nb + e)) &&
               (e >= want.full_num.get(qb) || host[3].get(qb * nb + e) == want.full_idx.get(qb * nb + e));
      }
    }
    const double ms = median_call_ms(gpu.dl, nullptr, 3, 10, [&] { flex.create_block_mask(d, a, exec); });
    row(fmt::format("flex_attention_create_block_mask,{},1,1,{},,{:.4f},,,first call {:.1f} ms; lists {}", m.name,
                    seqlen, ms, first_ms,
                    !compare ? "not compared"
                    : same   ? "equal the host's"
                             : "DIFFER from the host's"));
  }
}

}  // namespace
}  // namespace attnrt

int main(int argc, char** argv) {
  using namespace attnrt;
  std::vector<int> hdims = {64, 128}, seqlens = {2048, 8192};
  int heads = 16, batch = 2;
  bool backward = false, masks = false;
  int reps = 10;
  std::vector<std::string> only;  // --mods: the mods to run, by name (all when empty)
  std::string csv_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--hdim")
      hdims = split_ints(v);
    else if (a == "--seqlen")
      seqlens = split_ints(v);
    else if (a == "--heads")
      heads = std::stoi(v);
    else if (a == "--batch")
      batch = std::stoi(v);
    else if (a == "--backward")
      backward = v == "1" || v == "on";
    else if (a == "--block-mask")
      masks = v == "1" || v == "on";
    else if (a == "--csv")
      csv_path = v;
    else if (a == "--reps")
      reps = std::stoi(v);
    else if (a == "--mods")
      only = split_names(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const DeviceInventory& inv = probe_devices();
  if (inv.cuda.empty()) {
    std::fprintf(stderr, "no CUDA device: %s\n", inv.cuda_status.c_str());
    return 1;
  }
  const DeviceInfo gpu = inv.cuda.front();
  Registry registry(Registry::default_search_dirs());
  auto backend = [&](const char* name) -> std::unique_ptr<Backend> {
    const PluginRecord* r = registry.find(name, "cuda");
    return r ? std::make_unique<Backend>(registry.load(*r)) : nullptr;
  };
  std::unique_ptr<Backend> flex = backend("flex_attention"), fa2 = backend("flash_attention_2"),
                           fa3 = backend("flash_attention_3");
  if (!flex) {
    std::fprintf(stderr, "the CUDA plugin flex_attention is not installed\n");
    return 1;
  }
  std::ofstream csv_file;
  if (!csv_path.empty()) csv_file.open(csv_path);
  auto row = [&](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    if (csv_file) csv_file << line << "\n" << std::flush;
  };
  row("backend,mod,batch,heads,seqlen,head_dim,ms,tflops,visible_pairs,note");
  if (masks) {
    for (int seqlen : seqlens) time_block_masks(*flex, gpu, seqlen, row);
    return 0;
  }
  for (int hd : hdims) {
    for (int seqlen : seqlens) {
      WorkloadSpec spec;
      spec.batch = batch;
      spec.seqlen_q = spec.seqlen_k = seqlen;
      spec.heads_q = spec.heads_kv = heads;
      spec.head_dim = hd;
      spec.dtype = ATTNRT_DTYPE_BF16;
      spec.backward = backward;
      spec.seed = 7;
      Workload w = make_workload(spec);
      w.desc.device = gpu.dl;
      w.desc.cuda_arch = gpu.cuda_arch;
      DeviceWorkload dw(w, w.desc.device);
      attnrt_forward_args fa = dw.forward_args();
      attnrt_backward_args ba{};
      if (backward) ba = dw.backward_args();
      const std::vector<int32_t> doc = documents(seqlen);
      // aux tensors: ALiBi slopes [heads], a bias table [heads, 2 * seqlen - 1], document ids
      HostTensor slopes({heads}, DLDataType{kDLFloat, 32, 1}),
          table({heads, 2 * seqlen - 1}, DLDataType{kDLFloat, 32, 1}), docs({seqlen}, DLDataType{kDLInt, 32, 1});
      for (int h = 0; h < heads; ++h) slopes.set(h, std::exp2(-8.0 * (h + 1) / heads));
      std::mt19937_64 rng(3);
      table.fill_normal(rng, 0.5);
      for (int i = 0; i < seqlen; ++i) docs.set(i, doc[i]);
      DeviceTensor d_slopes(slopes, w.desc.device), d_table(table, w.desc.device), d_docs(docs, w.desc.device);
      for (const Mod& m : mods(seqlen, doc)) {
        if (!only.empty() && std::find(only.begin(), only.end(), m.name) == only.end()) continue;
        BlockMask bm = block_mask(m, seqlen);
        DeviceTensor num(bm.num, w.desc.device), idx(bm.idx, w.desc.device), full_num(bm.full_num, w.desc.device),
            full_idx(bm.full_idx, w.desc.device);
        const DLTensor* aux[1] = {m.needs_slopes ? d_slopes.dl() : m.needs_table ? d_table.dl() : d_docs.dl()};
        attnrt_flex_attention block{};
        block.header = {sizeof block, ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION, 0, nullptr};
        block.score_mod = m.score_mod.empty() ? nullptr : m.score_mod.c_str();
        block.score_mod_grad = m.score_mod_grad.empty() ? nullptr : m.score_mod_grad.c_str();
        block.mask_mod = m.mask_mod.c_str();
        block.source_name = "attnrt_flex_bench";
        block.num_aux = (m.needs_slopes || m.needs_table || m.needs_docs) ? 1 : 0;
        block.aux = aux;
        block.q_block_size = block.kv_block_size = 128;
        block.kv_num_blocks = num.dl();
        block.kv_indices = idx.dl();
        block.full_kv_num_blocks = full_num.dl();
        block.full_kv_indices = full_idx.dl();
        attnrt_attention_desc d = w.desc;
        d.extensions = &block.header;
        // The first call shape of these mods in this process: NVRTC (cold disk cache) or a cubin
        // load (warm), timed as the prepare step a user's first call waits for.
        const auto prepare_start = std::chrono::steady_clock::now();
        const std::string why = flex->unsupported_reason(d);
        const double prepare_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - prepare_start).count();
        if (!why.empty()) {
          row(fmt::format("flex_attention,{},{},{},{},{},,,,refused: {}", m.name, batch, heads, seqlen, hd, why));
          continue;
        }
        const double ms = median_call_ms(w.desc.device, nullptr, 3, reps, [&] { flex->forward(d, fa, 0); });
        const double tflops = 4.0 * batch * heads * bm.visible_pairs * hd / (ms * 1e-3) / 1e12;
        const double host = host_us(w.desc.device, [&] { flex->forward(d, fa, 0); });
        const double piped = pipelined_ms(w.desc.device, [&] { flex->forward(d, fa, 0); });
        row(fmt::format(
            "flex_attention,{},{},{},{},{},{:.4f},{:.1f},{:.0f},prepare {:.1f} ms; host {:.1f} us; pipelined "
            "{:.4f} ms",
            m.name, batch, heads, seqlen, hd, ms, tflops, bm.visible_pairs, prepare_ms, host, piped));
        if (backward) {  // after the forward above wrote out and lse
          const double bms = median_call_ms(w.desc.device, nullptr, 3, reps, [&] { flex->backward(d, ba, 0); });
          row(fmt::format("flex_attention_backward,{},{},{},{},{},{:.4f},{:.1f},{:.0f},", m.name, batch, heads, seqlen,
                          hd, bms, 10.0 * batch * heads * bm.visible_pairs * hd / (bms * 1e-3) / 1e12,
                          bm.visible_pairs));
        }
      }
      // The built-in causal rule of the flash kernels, on the same tensors.
      const double causal_pairs = double(seqlen) * (seqlen + 1) / 2;
      attnrt_attention_desc d = w.desc;
      d.causal = 1;
      for (const auto& [name, be] : std::vector<std::pair<std::string, Backend*>>{{"flash_attention_2", fa2.get()},
                                                                                  {"flash_attention_3", fa3.get()}}) {
        if (!be || !be->unsupported_reason(d).empty()) continue;
        const double ms = median_call_ms(w.desc.device, nullptr, 3, reps, [&] { be->forward(d, fa, 0); });
        const double host = host_us(w.desc.device, [&] { be->forward(d, fa, 0); });
        const double piped = pipelined_ms(w.desc.device, [&] { be->forward(d, fa, 0); });
        row(fmt::format("{},causal_builtin,{},{},{},{},{:.4f},{:.1f},{:.0f},host {:.1f} us; pipelined {:.4f} ms", name,
                        batch, heads, seqlen, hd, ms, 4.0 * batch * heads * causal_pairs * hd / (ms * 1e-3) / 1e12,
                        causal_pairs, host, piped));
        if (backward) {
          const double bms = median_call_ms(w.desc.device, nullptr, 3, reps, [&] { be->backward(d, ba, 0); });
          row(fmt::format("{}_backward,causal_builtin,{},{},{},{},{:.4f},{:.1f},{:.0f},", name, batch, heads, seqlen,
                          hd, bms, 10.0 * batch * heads * causal_pairs * hd / (bms * 1e-3) / 1e12, causal_pairs));
        }
      }
    }
  }
  return 0;
}
