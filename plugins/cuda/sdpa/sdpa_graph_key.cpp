// The descriptor -> cuDNN graph key mapping (sdpa_graph_key.hpp).
#include "sdpa_graph_key.hpp"

#include <attnrt/validate.hpp>

#include <cstring>

namespace attnrt::plugins::sdpa_cuda {
namespace {

int64_t stride_of(const DLTensor& t, int dim) {
  if (t.strides) return t.strides[dim];
  int64_t s = 1;
  for (int i = t.ndim - 1; i > dim; --i) s *= t.shape[i];
  return s;
}

// The strides of `t`, or of a compact tensor with `rows` tokens per sequence, `heads` and `dim`.
Strides strides(const DLTensor* t, bool varlen, int64_t rows, int64_t heads, int64_t dim) {
  Strides s;
  if (t) {
    const int nd = t->ndim;
    s.head = stride_of(*t, nd - 2);
    s.row = stride_of(*t, nd - 3);
    s.batch = nd == 4 ? stride_of(*t, 0) : 0;
  } else {
    s.head = dim;
    s.row = heads * dim;
    s.batch = rows * heads * dim;
  }
  if (varlen) s.batch = 0;
  return s;
}

GraphKey common(const attnrt_attention_desc& d, bool backward) {
  GraphKey k;
  k.backward = backward ? 1 : 0;
  k.dtype = d.dtype;
  k.batch = d.batch;
  k.heads_q = d.heads_q;
  k.heads_kv = d.heads_kv;
  k.seqlen_q = d.seqlen_q;
  k.seqlen_k = d.seqlen_k;
  k.head_dim = d.head_dim;
  k.head_dim_v = d.head_dim_v;
  uint32_t bits = 0;
  std::memcpy(&bits, &d.softmax_scale, sizeof bits);
  k.scale_bits = bits;
  const int32_t right = sdk::effective_window_right(d);
  k.right_bound = right >= 0 ? right : -1;
  k.left_bound = d.window_left >= 0 ? int64_t(d.window_left) + 1 : -1;
  k.varlen = d.is_varlen ? 1 : 0;
  k.sinks = d.has_sinks ? 1 : 0;
  k.device = d.device.device_id;
  k.sm = d.cuda_arch;
  return k;
}

}  // namespace

size_t GraphKeyHash::operator()(const GraphKey& k) const noexcept {
  // FNV-1a over the key's bytes (64-bit fields only: no padding).
  static_assert(sizeof(GraphKey) % sizeof(int64_t) == 0);
  const auto* p = reinterpret_cast<const unsigned char*>(&k);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof k; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return static_cast<size_t>(h);
}

GraphKey forward_key(const attnrt_attention_desc& d, const attnrt_forward_args* a) {
  GraphKey k = common(d, false);
  const bool vl = d.is_varlen != 0;
  k.stats = d.return_lse ? 1 : 0;
  if (d.is_paged) {
    // Pages [num_pages, page_size, heads_kv, dim]: rows of a page and heads within a row keep the
    // tensor's strides; without tensors (supports, workspace_size) a compact cache whose pages
    // cover every sequence's max_seqlen_k keys.
    k.paged = 1;
    k.page_size = d.page_size;
    k.max_pages = (int64_t(d.seqlen_k) + d.page_size - 1) / d.page_size;
    k.num_pages = a ? a->k->shape[0] : d.batch * k.max_pages;
    k.table_stride = k.max_pages;  // the plugin's dense copy (kern::paged_table)
    auto page = [&](const DLTensor* t, int64_t dim, Strides& s, int64_t& page_stride) {
      s.batch = 0;
      s.row = t ? stride_of(*t, 1) : int64_t(d.heads_kv) * dim;
      s.head = t ? stride_of(*t, 2) : dim;
      page_stride = t ? stride_of(*t, 0) : int64_t(d.page_size) * d.heads_kv * dim;
    };
    page(a ? a->k : nullptr, d.head_dim, k.k, k.k_page_stride);
    page(a ? a->v : nullptr, d.head_dim_v, k.v, k.v_page_stride);
    k.q = strides(a ? a->q : nullptr, vl, d.seqlen_q, d.heads_q, d.head_dim);
    k.out = strides(a ? a->out : nullptr, vl, d.seqlen_q, d.heads_q, d.head_dim_v);
    return k;
  }
  k.q = strides(a ? a->q : nullptr, vl, d.seqlen_q, d.heads_q, d.head_dim);
  k.k = strides(a ? a->k : nullptr, vl, d.seqlen_k, d.heads_kv, d.head_dim);
  k.v = strides(a ? a->v : nullptr, vl, d.seqlen_k, d.heads_kv, d.head_dim_v);
  k.out = strides(a ? a->out : nullptr, vl, d.seqlen_q, d.heads_q, d.head_dim_v);
  return k;
}

GraphKey backward_key(const attnrt_attention_desc& d, const attnrt_backward_args* a) {
  GraphKey k = common(d, true);
  const bool vl = d.is_varlen != 0;
  k.deterministic = d.deterministic ? 1 : 0;
  k.q = strides(a ? a->q : nullptr, vl, d.seqlen_q, d.heads_q, d.head_dim);
  k.k = strides(a ? a->k : nullptr, vl, d.seqlen_k, d.heads_kv, d.head_dim);
  k.v = strides(a ? a->v : nullptr, vl, d.seqlen_k, d.heads_kv, d.head_dim_v);
  k.out = strides(a ? a->out : nullptr, vl, d.seqlen_q, d.heads_q, d.head_dim_v);
  k.dout = strides(a ? a->dout : nullptr, vl, d.seqlen_q, d.heads_q, d.head_dim_v);
  k.dq = strides(a ? a->dq : nullptr, vl, d.seqlen_q, d.heads_q, d.head_dim);
  k.dk = strides(a ? a->dk : nullptr, vl, d.seqlen_k, d.heads_kv, d.head_dim);
  k.dv = strides(a ? a->dv : nullptr, vl, d.seqlen_k, d.heads_kv, d.head_dim_v);
  return k;
}

std::string describe(const GraphKey& k) {
  std::string s = k.backward ? "bwd " : "fwd ";
  s += sdk::dtype_name(static_cast<attnrt_dtype>(k.dtype));
  s += " b" + std::to_string(k.batch) + " h" + std::to_string(k.heads_q) + "/" + std::to_string(k.heads_kv) + " s" +
       std::to_string(k.seqlen_q) + "x" + std::to_string(k.seqlen_k) + " d" + std::to_string(k.head_dim) + "/" +
       std::to_string(k.head_dim_v);
  if (k.right_bound >= 0) s += " right_bound " + std::to_string(k.right_bound);
  if (k.left_bound >= 0) s += " left_bound " + std::to_string(k.left_bound);
  if (k.varlen) s += " varlen";
  if (k.stats) s += " stats";
  if (k.deterministic) s += " deterministic";
  if (k.sinks) s += " sinks";
  if (k.paged) s += " paged " + std::to_string(k.num_pages) + "x" + std::to_string(k.page_size);
  s += " sm_" + std::to_string(k.sm) + " cuda:" + std::to_string(k.device);
  return s;
}

}  // namespace attnrt::plugins::sdpa_cuda
