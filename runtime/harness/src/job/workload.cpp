#include <attnrt/harness/safetensors.hpp>
#include <attnrt/harness/workload.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/sites.hpp>
#include <attnrt/validate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnrt {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string>& workload_keys() {
  static const std::vector<std::string> keys = {
      "file",       "dtype",  "batch",     "seqlen_q", "seqlen_k",      "heads_q", "heads_kv",   "head_dim",
      "head_dim_v", "causal", "window",    "softcap",  "softmax_scale", "sinks",   "alibi",      "seqlens_q",
      "seqlens_k",  "paged",  "page_size", "backward", "return_lse",    "seed",    "iterations", "warmup"};
  return keys;
}

}  // namespace

WorkloadSpec read_workload(const Config& config, const fs::path& data_dir, std::vector<std::string>* warnings) {
  WorkloadSpec s;
  const YAML::Node w = config.at("workload");
  if (!w) return s;
  if (!w.IsMap()) throw Error(config.origin("workload").describe() + ": 'workload' must be a mapping");
  for (const auto& kv : w) {
    const std::string key = kv.first.as<std::string>();
    const std::string path = "workload." + key;
    const Origin origin = config.origin(path);
    const YAML::Node& v = kv.second;
    try {
      if (key == "file") {
        fs::path p = v.as<std::string>();
        if (p.is_relative()) {
          const bool from_file = origin.override.empty() && !origin.file.empty() && origin.file.front() != '<';
          const fs::path beside = from_file ? fs::path(origin.file).parent_path() / p : p;
          p = fs::exists(beside) ? beside : data_dir / p;
        }
        if (!fs::exists(p))
          throw Error(origin.describe() + ": workload file '" + v.as<std::string>() + "' not found (looked for " +
                      p.string() + ")");
        s.file = p;
      } else if (key == "dtype")
        s.dtype = parse_dtype(v.as<std::string>());
      else if (key == "batch")
        s.batch = v.as<int32_t>();
      else if (key == "seqlen_q")
        s.seqlen_q = v.as<int32_t>();
      else if (key == "seqlen_k")
        s.seqlen_k = v.as<int32_t>();
      else if (key == "heads_q")
        s.heads_q = v.as<int32_t>();
      else if (key == "heads_kv")
        s.heads_kv = v.as<int32_t>();
      else if (key == "head_dim")
        s.head_dim = v.as<int32_t>();
      else if (key == "head_dim_v")
        s.head_dim_v = v.as<int32_t>();
      else if (key == "causal")
        s.causal = v.as<bool>();
      else if (key == "window") {
        const auto win = v.as<std::vector<int32_t>>();
        if (win.size() != 2) throw Error(origin.describe() + ": 'window' must be [left, right] (-1: unlimited)");
        s.window_left = win[0];
        s.window_right = win[1];
      } else if (key == "softcap")
        s.softcap = v.as<float>();
      else if (key == "softmax_scale") {
        if (!v.IsNull()) s.softmax_scale = v.as<float>();
      } else if (key == "sinks")
        s.sinks = v.as<bool>();
      else if (key == "alibi")
        s.alibi = v.as<bool>();
      else if (key == "seqlens_q")
        s.seqlens_q = v.as<std::vector<int32_t>>();
      else if (key == "seqlens_k")
        s.seqlens_k = v.as<std::vector<int32_t>>();
      else if (key == "paged")
        s.paged = v.as<bool>();
      else if (key == "page_size")
        s.page_size = v.as<int32_t>();
      else if (key == "backward")
        s.backward = v.as<bool>();
      else if (key == "return_lse")
        s.return_lse = v.as<bool>();
      else if (key == "seed")
        s.seed = v.as<uint64_t>();
      else if (key == "iterations")
        s.iterations = v.as<int>();
      else if (key == "warmup")
        s.warmup = v.as<int>();
      else if (warnings) {
        const std::string guess = closest_match(key, workload_keys());
        warnings->push_back(fmt::format("{}: unknown workload key '{}' is ignored{}", origin.describe(), key,
                                        guess.empty() ? "" : "; did you mean '" + guess + "'?"));
      }
    } catch (const YAML::Exception& e) {
      throw Error(origin.describe() + ": invalid value for '" + path + "': " + e.msg);
    }
  }
  if (s.iterations < 1) throw Error(config.origin("workload.iterations").describe() + ": iterations must be >= 1");
  if (s.warmup < 0) throw Error(config.origin("workload.warmup").describe() + ": warmup must be >= 0");
  if (s.paged && s.seqlens_q.empty() && !s.seqlens_k.empty()) {
    throw Error(config.origin("workload.seqlens_k").describe() +
                ": a paged workload takes seqlens_k only with seqlens_q (varlen queries over the cache)");
  }
  if (s.seqlens_q.size() != s.seqlens_k.size() && !s.seqlens_k.empty()) {
    throw Error(config.origin("workload.seqlens_k").describe() +
                ": seqlens_k must list as many sequences as seqlens_q");
  }
  return s;
}

namespace {

HostTensor int32_vector(const std::vector<int32_t>& values) {
  HostTensor t({static_cast<int64_t>(values.size())}, dl_int32());
  std::copy(values.begin(), values.end(), t.data_as<int32_t>());
  return t;
}

std::vector<int32_t> prefix_sums(const std::vector<int32_t>& lengths) {
  std::vector<int32_t> cu(lengths.size() + 1, 0);
  std::partial_sum(lengths.begin(), lengths.end(), cu.begin() + 1);
  return cu;
}

// Packs rows of a [batch, seqlen, heads, dim] tensor where mask == 1 into [total, heads, dim].
HostTensor pack_by_mask(const HostTensor& t, const std::vector<std::vector<int64_t>>& rows, int64_t total,
                        DLDataType dtype) {
  const int64_t seqlen = t.shape()[1], heads = t.shape()[2], dim = t.shape()[3];
  HostTensor out({total, heads, dim}, dtype);
  int64_t dst = 0;
  for (size_t b = 0; b < rows.size(); ++b) {
    for (int64_t s : rows[b]) {
      for (int64_t e = 0; e < heads * dim; ++e)
        out.set(dst * heads * dim + e, t.get((static_cast<int64_t>(b) * seqlen + s) * heads * dim + e));
      ++dst;
    }
  }
  return out;
}

void load_file(const WorkloadSpec& spec, Workload& w) {
  SafetensorsFile f = load_safetensors(*spec.file);
  const std::string where = spec.file->string();
  for (const char* name : {"q", "k", "v"}) {
    auto it = f.tensors.find(name);
    if (it == f.tensors.end()) throw Error(where + ": missing tensor '" + std::string(name) + "'");
    if (it->second.shape().size() != 4) {
      throw Error(where + ": tensor '" + name + "' must be [batch, seqlen, heads, head_dim], got " +
                  sdk::shape_string(it->second.shape()));
    }
  }
  const HostTensor& q = f.tensors.at("q");
  const HostTensor& k = f.tensors.at("k");
  const HostTensor& v = f.tensors.at("v");
  attnrt_attention_desc& d = w.desc;
  d.batch = static_cast<int32_t>(q.shape()[0]);
  d.seqlen_q = static_cast<int32_t>(q.shape()[1]);
  d.seqlen_k = static_cast<int32_t>(k.shape()[1]);
  d.heads_q = static_cast<int32_t>(q.shape()[2]);
  d.heads_kv = static_cast<int32_t>(k.shape()[2]);
  d.head_dim = static_cast<int32_t>(q.shape()[3]);
  d.head_dim_v = static_cast<int32_t>(v.shape()[3]);
  if (k.shape()[0] != d.batch || v.shape()[0] != d.batch || v.shape()[1] != d.seqlen_k || v.shape()[2] != d.heads_kv ||
      k.shape()[3] != d.head_dim) {
    throw Error(where + ": q " + sdk::shape_string(q.shape()) + ", k " + sdk::shape_string(k.shape()) + ", v " +
                sdk::shape_string(v.shape()) + " do not describe one attention call");
  }
  if (auto it = f.metadata.find("softmax_scale"); it != f.metadata.end() && !spec.softmax_scale)
    d.softmax_scale = std::stof(it->second);
  w.source = where;
  if (auto it = f.metadata.find("model"); it != f.metadata.end())
    w.source += " (" + it->second + ", layer " + f.metadata["layer"] + ")";
  const DLDataType dt = dl_dtype_of(spec.dtype);

  auto mask_it = f.tensors.find("attention_mask");
  if (mask_it == f.tensors.end()) {
    w.q = q.to(dt);
    w.k = k.to(dt);
    w.v = v.to(dt);
    w.total_q = static_cast<int64_t>(d.batch) * d.seqlen_q;
    if (auto o = f.tensors.find("out_hf"); o != f.tensors.end()) w.model_out = o->second.to(dl_float32());
    return;
  }
  // Padding mask -> varlen: the real sequences, packed, with cu_seqlens (self-attention).
  const HostTensor& mask = mask_it->second;
  if (mask.shape() != std::vector<int64_t>{d.batch, d.seqlen_q} || d.seqlen_q != d.seqlen_k) {
    throw Error(where + ": attention_mask must be [batch, seqlen] of a self-attention call, got " +
                sdk::shape_string(mask.shape()));
  }
  std::vector<std::vector<int64_t>> rows(d.batch);
  std::vector<int32_t> lengths(d.batch, 0);
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t s = 0; s < d.seqlen_q; ++s) {
      if (mask.get(b * d.seqlen_q + s) != 0.0) rows[b].push_back(s);
    }
    lengths[b] = static_cast<int32_t>(rows[b].size());
  }
  const std::vector<int32_t> cu = prefix_sums(lengths);
  w.total_q = cu.back();
  w.q = pack_by_mask(q, rows, w.total_q, dt);
  w.k = pack_by_mask(k, rows, w.total_q, dt);
  w.v = pack_by_mask(v, rows, w.total_q, dt);
  if (auto o = f.tensors.find("out_hf"); o != f.tensors.end())
    w.model_out = pack_by_mask(o->second, rows, w.total_q, dl_float32());
  w.cu_seqlens_q = int32_vector(cu);
  w.cu_seqlens_k = int32_vector(cu);
  d.is_varlen = 1;
  d.seqlen_q = d.seqlen_k = *std::max_element(lengths.begin(), lengths.end());
}

void make_random(const WorkloadSpec& spec, Workload& w, std::mt19937_64& rng) {
  attnrt_attention_desc& d = w.desc;
  const DLDataType dt = dl_dtype_of(spec.dtype);
  d.heads_q = spec.heads_q;
  d.heads_kv = spec.heads_kv > 0 ? spec.heads_kv : spec.heads_q;
  d.head_dim = spec.head_dim;
  d.head_dim_v = spec.head_dim_v > 0 ? spec.head_dim_v : spec.head_dim;
  w.source = fmt::format("random normal inputs (seed {})", spec.seed);
  if (!spec.seqlens_q.empty() && spec.paged) {
    // ABI 1.2's chunked prefill: packed queries (cu_seqlens_q) over a paged cache of seqlens_k
    // keys per sequence, pages shuffled, block_table padded with -1 past each sequence's pages.
    const std::vector<int32_t>& lq = spec.seqlens_q;
    const std::vector<int32_t>& lk = spec.seqlens_k.empty() ? spec.seqlens_q : spec.seqlens_k;
    const auto cq = prefix_sums(lq);
    d.is_varlen = 1;
    d.is_paged = 1;
    d.page_size = spec.page_size;
    d.batch = static_cast<int32_t>(lq.size());
    d.seqlen_q = *std::max_element(lq.begin(), lq.end());
    d.seqlen_k = std::max(1, *std::max_element(lk.begin(), lk.end()));
    w.total_q = cq.back();
    w.q = HostTensor({cq.back(), d.heads_q, d.head_dim}, dt);
    w.cu_seqlens_q = int32_vector(cq);
    const int64_t max_pages = (d.seqlen_k + d.page_size - 1) / d.page_size;
    int64_t pages = 0;
    for (int32_t len : lk) pages += (len + d.page_size - 1) / d.page_size;
    std::vector<int32_t> order(std::max<int64_t>(pages, 1));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    w.k = HostTensor({int64_t(order.size()), d.page_size, d.heads_kv, d.head_dim}, dt);
    w.v = HostTensor({int64_t(order.size()), d.page_size, d.heads_kv, d.head_dim_v}, dt);
    w.block_table = HostTensor({d.batch, max_pages}, dl_int32());
    std::fill_n(w.block_table.data_as<int32_t>(), d.batch * max_pages, -1);
    size_t next = 0;
    for (int32_t b = 0; b < d.batch; ++b) {
      for (int64_t p = 0; p < (lk[b] + d.page_size - 1) / d.page_size; ++p) {
        w.block_table.data_as<int32_t>()[b * max_pages + p] = order[next++];
      }
    }
    w.seqused_k = int32_vector(lk);
  } else if (!spec.seqlens_q.empty()) {
    const std::vector<int32_t>& lq = spec.seqlens_q;
    const std::vector<int32_t>& lk = spec.seqlens_k.empty() ? spec.seqlens_q : spec.seqlens_k;
    const auto cq = prefix_sums(lq), ck = prefix_sums(lk);
    d.is_varlen = 1;
    d.batch = static_cast<int32_t>(lq.size());
    d.seqlen_q = *std::max_element(lq.begin(), lq.end());
    d.seqlen_k = *std::max_element(lk.begin(), lk.end());
    w.total_q = cq.back();
    w.q = HostTensor({cq.back(), d.heads_q, d.head_dim}, dt);
    w.k = HostTensor({ck.back(), d.heads_kv, d.head_dim}, dt);
    w.v = HostTensor({ck.back(), d.heads_kv, d.head_dim_v}, dt);
    w.cu_seqlens_q = int32_vector(cq);
    w.cu_seqlens_k = int32_vector(ck);
  } else {
    d.batch = spec.batch;
    d.seqlen_q = spec.seqlen_q;
    d.seqlen_k = spec.seqlen_k > 0 ? spec.seqlen_k : spec.seqlen_q;
    w.total_q = static_cast<int64_t>(d.batch) * d.seqlen_q;
    w.q = HostTensor({d.batch, d.seqlen_q, d.heads_q, d.head_dim}, dt);
    if (spec.paged) {
      // Pages of every sequence, shuffled so the block table really indirects.
      d.is_paged = 1;
      d.page_size = spec.page_size;
      const int64_t per_seq = (d.seqlen_k + d.page_size - 1) / d.page_size;
      const int64_t pages = per_seq * d.batch;
      std::vector<int32_t> order(pages);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      w.k = HostTensor({pages, d.page_size, d.heads_kv, d.head_dim}, dt);
      w.v = HostTensor({pages, d.page_size, d.heads_kv, d.head_dim_v}, dt);
      w.block_table = HostTensor({d.batch, per_seq}, dl_int32());
      std::copy(order.begin(), order.end(), w.block_table.data_as<int32_t>());
      w.seqused_k = int32_vector(std::vector<int32_t>(d.batch, d.seqlen_k));
    } else {
      w.k = HostTensor({d.batch, d.seqlen_k, d.heads_kv, d.head_dim}, dt);
      w.v = HostTensor({d.batch, d.seqlen_k, d.heads_kv, d.head_dim_v}, dt);
    }
  }
  for (HostTensor* t : {&w.q, &w.k, &w.v}) t->fill_normal_repeating(rng, spec.fill_period);
}

// Exact count of (query, key) pairs the mask lets through, summed over sequences.
double visible_pairs(const attnrt_attention_desc& d, const Workload& w) {
  double pairs = 0;
  const int32_t right = sdk::effective_window_right(d);
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t ql = d.is_varlen ? w.cu_seqlens_q.get(b + 1) - w.cu_seqlens_q.get(b) : d.seqlen_q;
    const int64_t kl = !w.seqused_k.empty() ? static_cast<int64_t>(w.seqused_k.get(b))
                       : d.is_varlen        ? w.cu_seqlens_k.get(b + 1) - w.cu_seqlens_k.get(b)
                                            : d.seqlen_k;
    for (int64_t i = 0; i < ql; ++i) {
      const int64_t diag = i + kl - ql;
      const int64_t lo = std::max<int64_t>(0, d.window_left >= 0 ? diag - d.window_left : 0);
      const int64_t hi = std::min<int64_t>(kl, right >= 0 ? diag + right + 1 : kl);
      pairs += std::max<int64_t>(0, hi - lo);
    }
  }
  return pairs;
}

}  // namespace

Workload make_workload(const WorkloadSpec& spec) {
  Workload w;
  attnrt_attention_desc& d = w.desc;
  d.struct_size = sizeof d;
  d.dtype = spec.dtype;
  d.window_left = -1;
  d.window_right = -1;
  std::mt19937_64 rng(spec.seed);
  if (spec.file)
    load_file(spec, w);
  else
    make_random(spec, w, rng);
  if (d.softmax_scale == 0.0f)
    d.softmax_scale = spec.softmax_scale.value_or(1.0f / std::sqrt(static_cast<float>(d.head_dim)));
  d.causal = spec.causal ? 1 : 0;
  d.window_left = spec.window_left;
  d.window_right = spec.window_right;
  d.softcap = spec.softcap;
  d.return_lse = spec.return_lse || spec.backward ? 1 : 0;
  d.device = DLDevice{kDLCPU, 0};
  sdk::check_desc(d);

  const DLDataType dt = dl_dtype_of(spec.dtype);
  const int64_t rows = d.is_varlen ? w.q.shape()[0] : static_cast<int64_t>(d.batch) * d.seqlen_q;
  std::vector<int64_t> out_shape = w.q.shape();
  out_shape.back() = d.head_dim_v;
  w.out = HostTensor(out_shape, dt);
  w.lse = d.is_varlen ? HostTensor({d.heads_q, rows}, dl_float32())
                      : HostTensor({d.batch, d.heads_q, d.seqlen_q}, dl_float32());
  if (spec.sinks) {
    d.has_sinks = 1;
    w.sinks = HostTensor({d.heads_q}, dl_float32());
    w.sinks.fill_normal(rng);
    w.dsinks = HostTensor({d.heads_q}, dl_float32());
  }
  if (spec.alibi) {
    // ALiBi's geometric slopes 2^(-8 h / heads) (Press et al. 2022).
    d.has_alibi = 1;
    w.alibi_slopes = HostTensor({d.heads_q}, dl_float32());
    for (int64_t h = 0; h < d.heads_q; ++h) w.alibi_slopes.set(h, std::pow(2.0, -8.0 * (h + 1) / d.heads_q));
  }
  w.dout = HostTensor(out_shape, dt);
  w.dout.fill_normal_repeating(rng, spec.fill_period);
  w.dq = HostTensor(w.q.shape(), dt);
  w.dk = HostTensor(w.k.shape(), dt);
  w.dv = HostTensor(w.v.shape(), dt);
  w.forward_flops = 2.0 * d.heads_q * (d.head_dim + d.head_dim_v) * visible_pairs(d, w);
  return w;
}

namespace {
const DLTensor* opt(const HostTensor& t) { return t.empty() ? nullptr : t.dl(); }

// The optional inputs forward and backward share.
template <class Args>
void set_optional_inputs(Args& a, const Workload& w) {
  a.sinks = opt(w.sinks);
  a.alibi_slopes = opt(w.alibi_slopes);
  a.cu_seqlens_q = opt(w.cu_seqlens_q);
  a.cu_seqlens_k = opt(w.cu_seqlens_k);
  a.seqused_k = opt(w.seqused_k);
  a.block_table = opt(w.block_table);
}
}  // namespace

attnrt_forward_args Workload::forward_args() {
  attnrt_forward_args a{};
  a.struct_size = sizeof a;
  a.q = q.dl();
  a.k = k.dl();
  a.v = v.dl();
  a.out = out.dl();
  a.lse = desc.return_lse ? lse.dl() : nullptr;
  set_optional_inputs(a, *this);
  return a;
}

attnrt_backward_args Workload::backward_args() {
  attnrt_backward_args a{};
  a.struct_size = sizeof a;
  a.dout = dout.dl();
  a.q = q.dl();
  a.k = k.dl();
  a.v = v.dl();
  a.out = out.dl();
  a.lse = lse.dl();
  a.dq = dq.dl();
  a.dk = dk.dl();
  a.dv = dv.dl();
  a.dsinks = desc.has_sinks ? dsinks.dl() : nullptr;
  set_optional_inputs(a, *this);
  return a;
}

size_t Workload::tensor_bytes() const {
  size_t n = 0;
  for (const HostTensor* t : tensors()) n += t->empty() ? 0 : t->nbytes();
  return n;
}

}  // namespace attnrt
