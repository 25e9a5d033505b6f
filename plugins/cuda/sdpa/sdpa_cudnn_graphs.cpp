// cuDNN SDPA graphs: building (cuDNN frontend graph API; its samples/cpp/sdpa show the same
// calls), the process-wide cache of built graphs and their execution (sdpa_cudnn_graphs.hpp).
#include "sdpa_cudnn_graphs.hpp"

#include "cudnn_library.hpp"

#include <attnrt/status.hpp>
#include <attnrt_cuda/cuda_check.hpp>

#include <cudnn_frontend.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace attnrt::plugins::sdpa_cuda {
namespace {

namespace fe = cudnn_frontend;
using Graph = fe::graph::Graph;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

// Tensor uids: the keys of the variant pack.
enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kDO,
  kDQ,
  kDK,
  kDV,
  kSeqQ,
  kSeqKV,
  kRaggedQ,
  kRaggedK,
  kRaggedV,
  kRaggedO,
  kRaggedDO,
  kRaggedDQ,
  kRaggedDK,
  kRaggedDV,
  kSink,
  kDSink,
  kPageTableK,
  kPageTableV,
  kUidEnd
};

sdk::Error unsupported(const std::string& why) {
  return sdk::Error(ATTNRT_ERROR_UNSUPPORTED, cudnn_library().version_string() + ": " + why);
}

// The calling thread's cuDNN handle on `device` (created on first use, kept for the thread).
cudnnHandle_t thread_handle(int64_t device) {
  thread_local std::unordered_map<int64_t, cudnnHandle_t> handles;
  if (auto it = handles.find(device); it != handles.end()) return it->second;
  cudnnHandle_t h = nullptr;
  const cudnnStatus_t s = fe::detail::create_handle(&h);
  if (s != CUDNN_STATUS_SUCCESS) {
    throw sdk::Error(ATTNRT_ERROR_DEVICE,
                     cudnn_library().version_string() + ": cudnnCreate failed: " + fe::detail::get_error_string(s));
  }
  handles.emplace(device, h);
  return h;
}

// Makes `device` current on this thread for a scope (supports and workspace_size build graphs
// from any thread; the caller's current device is left as it was).
class DeviceScope {
 public:
  explicit DeviceScope(int64_t device) {
    cuda::check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) cuda::check_cuda(cudaSetDevice(int(device)), "cudaSetDevice");
  }
  ~DeviceScope() { cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

std::vector<int64_t> dims(int64_t b, int64_t h, int64_t s, int64_t d) { return {b, h, s, d}; }

// BSHD as given: cuDNN's (b, h, s, d) order with the tensor's own strides. A varlen tensor's
// batch stride is never used (its rows start at the ragged offsets); it is given as the padded
// layout's.
std::vector<int64_t> strides(const Strides& st, int64_t s) {
  return {st.batch ? st.batch : s * st.row, st.head, st.row, 1};
}

struct Builder {
  const GraphKey& k;
  std::shared_ptr<Graph> g = std::make_shared<Graph>();

  TensorPtr tensor(const char* name, int64_t uid, int64_t h, int64_t s, int64_t d, const Strides& st) {
    return g->tensor(fe::graph::Tensor_attributes()
                         .set_name(name)
                         .set_uid(uid)
                         .set_dim(dims(k.batch, h, s, d))
                         .set_stride(strides(st, s)));
  }
  TensorPtr int32_vector(const char* name, int64_t uid, int64_t n) {
    return g->tensor(fe::graph::Tensor_attributes()
                         .set_name(name)
                         .set_uid(uid)
                         .set_dim({n, 1, 1, 1})
                         .set_stride({1, 1, 1, 1})
                         .set_data_type(fe::DataType_t::INT32));
  }
  void ragged(const TensorPtr& t, const char* name, int64_t uid) {
    if (k.varlen) t->set_ragged_offset(int32_vector(name, uid, k.batch + 1));
  }
  TensorPtr stats_tensor() {
    return g->tensor(fe::graph::Tensor_attributes()
                         .set_name("stats")
                         .set_uid(kStats)
                         .set_dim(dims(k.batch, k.heads_q, k.seqlen_q, 1))
                         .set_stride({k.heads_q * k.seqlen_q, k.seqlen_q, 1, 1})
                         .set_data_type(fe::DataType_t::FLOAT));
  }
  // A per-head float32 vector as cuDNN's [1, h_q, 1, 1] (sink_token, dsink_token).
  TensorPtr head_vector(const char* name, int64_t uid) {
    return g->tensor(fe::graph::Tensor_attributes()
                         .set_name(name)
                         .set_uid(uid)
                         .set_dim({1, k.heads_q, 1, 1})
                         .set_stride({k.heads_q, 1, 1, 1})
                         .set_data_type(fe::DataType_t::FLOAT));
  }
  float scale() const {
    const uint32_t bits = static_cast<uint32_t>(k.scale_bits);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  // Masks shared by the forward and backward attributes.
  template <class Attributes>
  void masks(Attributes& a) {
    if (k.right_bound >= 0 || k.left_bound >= 0) {
      // Top-left and bottom-right coincide when every sequence has seqlen_q == seqlen_k.
      a.set_diagonal_alignment(!k.varlen && !k.paged && k.seqlen_q == k.seqlen_k
                                   ? fe::DiagonalAlignment_t::TOP_LEFT
                                   : fe::DiagonalAlignment_t::BOTTOM_RIGHT);
    }
    if (k.right_bound >= 0) a.set_diagonal_band_right_bound(int(k.right_bound));
    if (k.left_bound >= 0) a.set_diagonal_band_left_bound(int(k.left_bound));
    if (k.varlen || k.paged) {
      a.set_padding_mask(true)
          .set_seq_len_q(int32_vector("seq_len_q", kSeqQ, k.batch))
          .set_seq_len_kv(int32_vector("seq_len_kv", kSeqKV, k.batch));
    }
  }

  // A paged cache as cuDNN's container [num_pages, h_kv, page_size, dim], its own strides.
  TensorPtr pages(const char* name, int64_t uid, int64_t dim, const Strides& st, int64_t page_stride) {
    return g->tensor(fe::graph::Tensor_attributes()
                         .set_name(name)
                         .set_uid(uid)
                         .set_dim({k.num_pages, k.heads_kv, k.page_size, dim})
                         .set_stride({page_stride, st.head, st.row, 1}));
  }
  // block_table [b, max_pages] as cuDNN's page table [b, 1, max_pages, 1].
  TensorPtr page_table(const char* name, int64_t uid) {
    return g->tensor(fe::graph::Tensor_attributes()
                         .set_name(name)
                         .set_uid(uid)
                         .set_dim({k.batch, 1, k.max_pages, 1})
                         .set_stride({k.table_stride, k.max_pages, 1, 1})
                         .set_data_type(fe::DataType_t::INT32));
  }

  void forward() {
    auto q = tensor("q", kQ, k.heads_q, k.seqlen_q, k.head_dim, k.q);
    auto kt = k.paged ? pages("k", kK, k.head_dim, k.k, k.k_page_stride)
                      : tensor("k", kK, k.heads_kv, k.seqlen_k, k.head_dim, k.k);
    auto v = k.paged ? pages("v", kV, k.head_dim_v, k.v, k.v_page_stride)
                     : tensor("v", kV, k.heads_kv, k.seqlen_k, k.head_dim_v, k.v);
    ragged(q, "ragged_q", kRaggedQ);
    ragged(kt, "ragged_k", kRaggedK);
    ragged(v, "ragged_v", kRaggedV);
    auto attrs = fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(k.stats != 0).set_attn_scale(scale());
    masks(attrs);
    if (k.sinks) attrs.set_sink_token(head_vector("sink", kSink));
    if (k.paged) {
      attrs.set_paged_attention_k_table(page_table("page_table_k", kPageTableK))
          .set_paged_attention_v_table(page_table("page_table_v", kPageTableV))
          .set_paged_attention_max_seq_len_kv(int(k.seqlen_k));
    }
    auto [o, stats] = g->sdpa(q, kt, v, attrs);
    o->set_output(true)
        .set_uid(kO)
        .set_dim(dims(k.batch, k.heads_q, k.seqlen_q, k.head_dim_v))
        .set_stride(strides(k.out, k.seqlen_q));
    ragged(o, "ragged_o", kRaggedO);
    if (k.stats) {
      stats->set_output(true)
          .set_uid(kStats)
          .set_data_type(fe::DataType_t::FLOAT)
          .set_dim(dims(k.batch, k.heads_q, k.seqlen_q, 1))
          .set_stride({k.heads_q * k.seqlen_q, k.seqlen_q, 1, 1});
    }
  }

  void backward() {
    auto q = tensor("q", kQ, k.heads_q, k.seqlen_q, k.head_dim, k.q);
    auto kt = tensor("k", kK, k.heads_kv, k.seqlen_k, k.head_dim, k.k);
    auto v = tensor("v", kV, k.heads_kv, k.seqlen_k, k.head_dim_v, k.v);
    auto o = tensor("o", kO, k.heads_q, k.seqlen_q, k.head_dim_v, k.out);
    auto dout = tensor("dout", kDO, k.heads_q, k.seqlen_q, k.head_dim_v, k.dout);
    ragged(q, "ragged_q", kRaggedQ);
    ragged(kt, "ragged_k", kRaggedK);
    ragged(v, "ragged_v", kRaggedV);
    ragged(o, "ragged_o", kRaggedO);
    ragged(dout, "ragged_dout", kRaggedDO);
    auto stats = stats_tensor();
    auto attrs = fe::graph::SDPA_backward_attributes().set_name("sdpa_backward").set_attn_scale(scale());
    masks(attrs);
    if (k.deterministic) attrs.set_deterministic_algorithm(true);
    if (k.sinks) attrs.set_sink_token(head_vector("sink", kSink)).set_dsink_token(head_vector("dsink", kDSink));
    auto [dq, dk, dv] = g->sdpa_backward(q, kt, v, o, dout, stats, attrs);
    dq->set_output(true)
        .set_uid(kDQ)
        .set_dim(dims(k.batch, k.heads_q, k.seqlen_q, k.head_dim))
        .set_stride(strides(k.dq, k.seqlen_q));
    dk->set_output(true)
        .set_uid(kDK)
        .set_dim(dims(k.batch, k.heads_kv, k.seqlen_k, k.head_dim))
        .set_stride(strides(k.dk, k.seqlen_k));
    dv->set_output(true)
        .set_uid(kDV)
        .set_dim(dims(k.batch, k.heads_kv, k.seqlen_k, k.head_dim_v))
        .set_stride(strides(k.dv, k.seqlen_k));
    ragged(dq, "ragged_dq", kRaggedDQ);
    ragged(dk, "ragged_dk", kRaggedDK);
    ragged(dv, "ragged_dv", kRaggedDV);
  }
};

std::atomic<uint64_t> g_built{0};

// Read at every build (builds are rare), so that a test can turn it on for a scope.
bool trace_builds() {
  const char* v = std::getenv("ATTNRT_SDPA_CUDNN_TRACE");
  return v && v[0] && std::string(v) != "0";
}

// Builds the graph of `key` with this thread's handle (the key's device current). Returns the
// graph, or null and the reason in `why`.
std::shared_ptr<Graph> build(const GraphKey& key, std::string& why) {
  try {
    DeviceScope scope(key.device);
    Builder b{key};
    b.g->set_io_data_type(key.dtype == ATTNRT_DTYPE_FP16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    b.g->set_sm_version(int32_t(key.sm));
    if (key.backward) {
      b.backward();
    } else {
      b.forward();
    }
    fe::error_t status = b.g->build(thread_handle(key.device), {fe::HeurMode_t::A});
    if (!status.is_good()) {
      why = cudnn_library().version_string() + " has no fused attention for this call: " + status.get_message();
      return nullptr;
    }
    const uint64_t n = ++g_built;
    if (trace_builds())
      std::fprintf(stderr, "attnrt sdpa (cuDNN): built graph #%llu: %s\n", (unsigned long long)n,
                   describe(key).c_str());
    return b.g;
  } catch (const sdk::Error& e) {
    why = e.what();
  } catch (const std::exception& e) {  // the frontend throws on a missing library symbol
    why = cudnn_library().version_string() + ": building the attention graph failed: " + e.what();
  }
  return nullptr;
}

// One key's graphs: a pool of built ones, leased one call at a time.
struct Entry {
  std::mutex mutex;
  bool tried = false;
  std::string error;  // why cuDNN cannot build it ("" when it can)
  int64_t workspace = 0;
  // The uids the graph's variant pack takes, in the frontend's order (ascending uid): execute()
  // gets a pointer array in this order, not a map built per call.
  std::vector<int64_t> uids;
  std::vector<std::shared_ptr<Graph>> idle;
};

class Cache {
 public:
  std::shared_ptr<Entry> entry(const GraphKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<Entry>& e = entries_[key];
    if (!e) e = std::make_shared<Entry>();
    return e;
  }

  // The entry of `key`, its first graph built (under the entry's lock, so that threads that
  // meet on a new key build it once). A call asks twice (supports() with compact strides, then
  // the call's own key) and a thread tends to repeat its keys: each thread remembers its last
  // few ready entries, so that a hit takes no lock of the whole cache and no hash. Entries are
  // never removed, so a remembered one stays valid.
  const std::shared_ptr<Entry>& ready(const GraphKey& key) {
    struct Recent {
      GraphKey key;
      std::shared_ptr<Entry> entry;
    };
    constexpr size_t kRecent = 4;
    thread_local Recent recent[kRecent];
    thread_local size_t next = 0;
    for (const Recent& r : recent) {
      if (r.entry && r.key == key) return r.entry;
    }
    Recent& r = recent[next];
    next = (next + 1) % kRecent;
    r.entry = build_once(key);
    r.key = key;
    return r.entry;
  }

 private:
  std::shared_ptr<Entry> build_once(const GraphKey& key) {
    std::shared_ptr<Entry> e = entry(key);
    std::lock_guard<std::mutex> lock(e->mutex);
    if (!e->tried) {
      e->tried = true;
      std::string why;
      if (std::shared_ptr<Graph> g = build(key, why)) {
        if (!g->get_workspace_size(e->workspace).is_good()) e->workspace = 0;
        const auto& vt = g->varpack_template;
        for (int slot : vt.user_slots) e->uids.push_back(vt.all_uids[size_t(slot)]);
        e->idle.push_back(std::move(g));
      } else {
        e->error = why;
      }
    }
    return e;
  }

  std::mutex mutex_;
  std::unordered_map<GraphKey, std::shared_ptr<Entry>, GraphKeyHash> entries_;
};

Cache& cache() {
  static Cache& c = *new Cache;  // never destroyed: plans must not be freed after CUDA shuts down
  return c;
}

// A graph leased from an entry's pool for one call, given back when the call ends.
class Lease {
 public:
  Lease(Entry* e, const GraphKey& key) : entry_(e) {
    {
      std::lock_guard<std::mutex> lock(entry_->mutex);
      if (!entry_->idle.empty()) {
        graph_ = std::move(entry_->idle.back());
        entry_->idle.pop_back();
        return;
      }
    }
    std::string why;  // every built graph is running on another thread: one more
    graph_ = build(key, why);
    if (!graph_) throw unsupported(why);
  }
  ~Lease() {
    std::lock_guard<std::mutex> lock(entry_->mutex);
    entry_->idle.push_back(std::move(graph_));
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  const Graph& graph() const { return *graph_; }

 private:
  Entry* entry_;  // the cache's: never destroyed
  std::shared_ptr<Graph> graph_;
};

}  // namespace

std::string graph_support_reason(const GraphKey& key) { return cache().ready(key)->error; }

size_t graph_workspace_size(const GraphKey& key) {
  const std::shared_ptr<Entry>& e = cache().ready(key);
  if (!e->error.empty()) throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, e->error);
  return size_t(e->workspace);
}

void graph_execute(const GraphKey& key, const GraphPointers& p, void* workspace, size_t workspace_bytes,
                   cudaStream_t stream) {
  Entry& e = *cache().ready(key);
  if (!e.error.empty()) throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, e.error);
  if (size_t(e.workspace) > workspace_bytes) {
    throw sdk::Error(ATTNRT_ERROR_OUT_OF_MEMORY, "cuDNN's graph for " + describe(key) + " needs " +
                                                     std::to_string(e.workspace) + " bytes of workspace, " +
                                                     std::to_string(workspace_bytes) + " given");
  }
  // Every role's pointer by uid; the graph takes those of e.uids, in that order.
  const void* by_uid[kUidEnd] = {};
  by_uid[kQ] = p.q;
  by_uid[kK] = p.k;
  by_uid[kV] = p.v;
  by_uid[kO] = p.out;
  by_uid[kStats] = p.stats;
  by_uid[kDO] = p.dout;
  by_uid[kDQ] = p.dq;
  by_uid[kDK] = p.dk;
  by_uid[kDV] = p.dv;
  by_uid[kSeqQ] = p.seq_len_q;
  by_uid[kSeqKV] = p.seq_len_kv;
  by_uid[kRaggedQ] = p.ragged_q;
  by_uid[kRaggedK] = p.ragged_k;
  by_uid[kRaggedV] = p.ragged_v;
  by_uid[kRaggedO] = p.ragged_out;
  by_uid[kRaggedDO] = p.ragged_dout;
  by_uid[kRaggedDQ] = p.ragged_dq;
  by_uid[kRaggedDK] = p.ragged_dk;
  by_uid[kRaggedDV] = p.ragged_dv;
  by_uid[kSink] = p.sinks;
  by_uid[kDSink] = p.dsinks;
  by_uid[kPageTableK] = p.block_table;
  by_uid[kPageTableV] = p.block_table;
  void* ptrs[kUidEnd];
  const int n = int(e.uids.size());
  for (int i = 0; i < n; ++i) {
    const int64_t uid = e.uids[size_t(i)];
    const void* ptr = uid > 0 && uid < kUidEnd ? by_uid[uid] : nullptr;
    if (!ptr) {
      throw sdk::Error(ATTNRT_ERROR_INTERNAL, "cuDNN's graph for " + describe(key) + " takes tensor uid " +
                                                  std::to_string(uid) + ", which the call has no pointer for");
    }
    ptrs[i] = const_cast<void*>(ptr);
  }
  Lease lease(&e, key);
  cudnnHandle_t handle = thread_handle(key.device);
  const cudnnStatus_t s = fe::detail::set_stream(handle, stream);
  if (s != CUDNN_STATUS_SUCCESS) {
    throw sdk::Error(ATTNRT_ERROR_DEVICE, "cudnnSetStream: " + std::string(fe::detail::get_error_string(s)));
  }
  fe::error_t status = lease.graph().execute(handle, ptrs, n, workspace);
  if (!status.is_good()) {
    throw sdk::Error(ATTNRT_ERROR_DEVICE, cudnn_library().version_string() + ": executing the attention graph (" +
                                              describe(key) + ") failed: " + status.get_message());
  }
}

uint64_t graphs_built() { return g_built.load(); }

}  // namespace attnrt::plugins::sdpa_cuda
