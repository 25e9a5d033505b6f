#include "sdpa_gemm.hpp"

#include "onednn_library.hpp"

#include <attnrt/status.hpp>

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace attnrt::plugins::sdpa {
namespace {

// oneDNN parallelises a product unless omp_in_parallel(), which is false in a region of one
// thread: a one-thread call then paid a team of every core per tile product (a third of its time
// in libgomp). One thread for nested regions, set in this thread's own data environment (the
// kernels' parallel region), so the caller's setting is untouched.
void one_thread_per_product() {
#if defined(_OPENMP)
  if (omp_get_max_threads() != 1) omp_set_num_threads(1);
#endif
}

// One bf16 matmul primitive of one shape, owned by one thread, with its memory objects (their
// data handles are set per call) and its scratchpad (user mode: nothing shared between threads).
struct Bf16Product {
  const OnednnApi* api = nullptr;
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_t a = nullptr, b = nullptr, c = nullptr, scratchpad = nullptr;
  std::vector<char> scratchpad_bytes;

  ~Bf16Product() {
    if (!api) return;
    for (dnnl_memory_t m : {a, b, c, scratchpad}) {
      if (m) api->memory_destroy(m);
    }
    if (primitive) api->primitive_destroy(primitive);
  }
};

using ShapeKey = std::array<int64_t, 10>;

dnnl_status_t create(const OnednnLibrary& lib, const ShapeKey& key, Bf16Product& p) {
  const OnednnApi& api = lib.api;
  const auto [m, n, k, sa_i, sa_k, sb_k, sb_j, ldc, accumulate, unused] = key;
  (void)unused;
  dnnl_memory_desc_t a_md, b_md, c_md;
  const dnnl_dims_t a_dims = {m, k}, b_dims = {k, n}, c_dims = {m, n};
  const dnnl_dims_t a_strides = {sa_i, sa_k}, b_strides = {sb_k, sb_j}, c_strides = {ldc, 1};
  dnnl_status_t st = api.memory_desc_init_by_strides(&a_md, 2, a_dims, dnnl_bf16, a_strides);
  if (st == dnnl_success) st = api.memory_desc_init_by_strides(&b_md, 2, b_dims, dnnl_bf16, b_strides);
  if (st == dnnl_success) st = api.memory_desc_init_by_strides(&c_md, 2, c_dims, dnnl_f32, c_strides);
  dnnl_matmul_desc_t desc;
  if (st == dnnl_success) st = api.matmul_desc_init(&desc, &a_md, &b_md, nullptr, &c_md);
  if (st != dnnl_success) return st;

  dnnl_primitive_attr_t attr = nullptr;
  dnnl_post_ops_t post_ops = nullptr;
  dnnl_primitive_desc_t pd = nullptr;
  st = api.primitive_attr_create(&attr);
  if (st == dnnl_success) st = api.primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (st == dnnl_success && accumulate) {
    st = api.post_ops_create(&post_ops);  // C = A B + C: the "sum" post-op
    if (st == dnnl_success) st = api.post_ops_append_sum(post_ops, 1.0f);
    if (st == dnnl_success) st = api.primitive_attr_set_post_ops(attr, post_ops);
  }
  if (st == dnnl_success) st = api.primitive_desc_create(&pd, &desc, attr, lib.engine, nullptr);
  if (st == dnnl_success) {
    const dnnl_memory_desc_t* scratch_md = api.primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    p.scratchpad_bytes.resize(scratch_md ? api.memory_desc_get_size(scratch_md) : 0);
    st = api.primitive_create(&p.primitive, pd);
    if (st == dnnl_success) st = api.memory_create(&p.a, &a_md, lib.engine, DNNL_MEMORY_NONE);
    if (st == dnnl_success) st = api.memory_create(&p.b, &b_md, lib.engine, DNNL_MEMORY_NONE);
    if (st == dnnl_success) st = api.memory_create(&p.c, &c_md, lib.engine, DNNL_MEMORY_NONE);
    if (st == dnnl_success && scratch_md && !p.scratchpad_bytes.empty()) {
      st = api.memory_create(&p.scratchpad, scratch_md, lib.engine, p.scratchpad_bytes.data());
    }
  }
  if (pd) api.primitive_desc_destroy(pd);
  if (post_ops) api.post_ops_destroy(post_ops);
  if (attr) api.primitive_attr_destroy(attr);
  return st;
}

// This thread's primitives and stream. Pool threads live as long as the process, so the cache is
// built once per shape and thread; entries are released at thread exit.
struct ThreadProducts {
  const OnednnApi* api = nullptr;
  dnnl_stream_t stream = nullptr;
  std::map<ShapeKey, std::unique_ptr<Bf16Product>> products;
  ~ThreadProducts() {
    products.clear();
    if (stream) api->stream_destroy(stream);
  }
};

}  // namespace

void GemmErrors::record(int status, const char* what) {
  int expected = 0;
  if (first_status_.compare_exchange_strong(expected, status)) first_what_.store(what);
}

void GemmErrors::check() const {
  const int status = first_status_.load();
  if (status != 0) {
    const char* what = first_what_.load();
    throw sdk::Error(ATTNRT_ERROR_INTERNAL, std::string("oneDNN failed on a tile product: ") + (what ? what : "?") +
                                                " returned dnnl_status_t " + std::to_string(status));
  }
}

void TileGemm::operator()(float* c, int64_t ldc, const float* a, int64_t sa_i, int64_t sa_k, const float* b,
                          int64_t ldb, int64_t m, int64_t n, int64_t k, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  one_thread_per_product();
  // A stored row-major is 'N' with lda = sa_i; A^T stored row-major is 'T' with lda = sa_k.
  const bool a_transposed = sa_k != 1;
  const dnnl_status_t status =
      onednn_library().api.sgemm(a_transposed ? 'T' : 'N', 'N', m, n, k, 1.0f, a, a_transposed ? sa_k : sa_i, b, ldb,
                                 accumulate ? 1.0f : 0.0f, c, ldc);
  if (status != dnnl_success) record(status, "dnnl_sgemm");
}

void Bf16TileGemm::operator()(float* c, int64_t ldc, const uint16_t* a, int64_t sa_i, int64_t sa_k, const uint16_t* b,
                              int64_t sb_k, int64_t sb_j, int64_t m, int64_t n, int64_t k, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  one_thread_per_product();
  const OnednnLibrary& lib = onednn_library();
  thread_local ThreadProducts mine;
  if (!mine.stream) {
    mine.api = &lib.api;
    if (const dnnl_status_t st = lib.api.stream_create(&mine.stream, lib.engine, dnnl_stream_default_flags);
        st != dnnl_success) {
      mine.stream = nullptr;
      record(st, "dnnl_stream_create");
      return;
    }
  }
  const ShapeKey key = {m, n, k, sa_i, sa_k, sb_k, sb_j, ldc, accumulate ? 1 : 0, 0};
  std::unique_ptr<Bf16Product>& slot = mine.products[key];
  if (!slot) {
    auto p = std::make_unique<Bf16Product>();
    p->api = &lib.api;
    if (const dnnl_status_t st = create(lib, key, *p); st != dnnl_success) {
      mine.products.erase(key);
      record(st, "creating the bf16 matmul primitive");
      return;
    }
    slot = std::move(p);
  }
  Bf16Product& p = *slot;
  const OnednnApi& api = lib.api;
  // The handles are the call's tensors; the memory objects only describe them.
  api.memory_set_data_handle(p.a, const_cast<uint16_t*>(a));
  api.memory_set_data_handle(p.b, const_cast<uint16_t*>(b));
  api.memory_set_data_handle(p.c, c);
  dnnl_exec_arg_t args[4] = {
      {DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}, {DNNL_ARG_SCRATCHPAD, p.scratchpad}};
  const int nargs = p.scratchpad ? 4 : 3;
  if (const dnnl_status_t st = api.primitive_execute(p.primitive, mine.stream, nargs, args); st != dnnl_success) {
    record(st, "dnnl_primitive_execute (bf16 matmul)");
  }
}

}  // namespace attnrt::plugins::sdpa
