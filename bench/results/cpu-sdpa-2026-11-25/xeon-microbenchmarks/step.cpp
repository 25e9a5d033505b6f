// One forward step on a 128x256 tile: S = Q K^T (bf16 matmul), softmax, O += P V; each piece timed alone and in
// sequence.
#include <oneapi/dnnl/dnnl.h>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include "online_softmax.hpp"
using namespace attnrt::plugins::sdpa;
#define CK(x)                           \
  do {                                  \
    dnnl_status_t s_ = (x);             \
    if (s_) {                           \
      printf("fail %s = %d\n", #x, s_); \
      return nullptr;                   \
    }                                   \
  } while (0)
dnnl_engine_t eng;
dnnl_stream_t st;
struct MM {
  dnnl_primitive_t p;
  dnnl_memory_t a, b, c, s;
  std::vector<char> sb;
};
MM* make(int M, int N, int K, long sa0, long sa1, long sb0, long sb1, long ldc, bool acc) {
  auto* m = new MM;
  dnnl_memory_desc_t a, b, c;
  dnnl_dims_t da = {M, K}, db = {K, N}, dc = {M, N};
  dnnl_dims_t sa = {sa0, sa1}, sb = {sb0, sb1}, sc = {ldc, 1};
  CK(dnnl_memory_desc_init_by_strides(&a, 2, da, dnnl_bf16, sa));
  CK(dnnl_memory_desc_init_by_strides(&b, 2, db, dnnl_bf16, sb));
  CK(dnnl_memory_desc_init_by_strides(&c, 2, dc, dnnl_f32, sc));
  dnnl_matmul_desc_t md;
  CK(dnnl_matmul_desc_init(&md, &a, &b, nullptr, &c));
  dnnl_primitive_attr_t attr;
  CK(dnnl_primitive_attr_create(&attr));
  CK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
  if (acc) {
    dnnl_post_ops_t po;
    CK(dnnl_post_ops_create(&po));
    CK(dnnl_post_ops_append_sum(po, 1.0f));
    CK(dnnl_primitive_attr_set_post_ops(attr, po));
  }
  dnnl_primitive_desc_t pd;
  CK(dnnl_primitive_desc_create(&pd, &md, attr, eng, nullptr));
  const dnnl_memory_desc_t* smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  m->sb.resize(dnnl_memory_desc_get_size(smd) + 64);
  CK(dnnl_primitive_create(&m->p, pd));
  CK(dnnl_memory_create(&m->a, &a, eng, DNNL_MEMORY_NONE));
  CK(dnnl_memory_create(&m->b, &b, eng, DNNL_MEMORY_NONE));
  CK(dnnl_memory_create(&m->c, &c, eng, DNNL_MEMORY_NONE));
  CK(dnnl_memory_create(&m->s, smd, eng, m->sb.data()));
  return m;
}
void run(MM* m, const void* a, const void* b, float* c) {
  dnnl_memory_set_data_handle(m->a, (void*)a);
  dnnl_memory_set_data_handle(m->b, (void*)b);
  dnnl_memory_set_data_handle(m->c, c);
  dnnl_exec_arg_t args[4] = {
      {DNNL_ARG_SRC, m->a}, {DNNL_ARG_WEIGHTS, m->b}, {DNNL_ARG_DST, m->c}, {DNNL_ARG_SCRATCHPAD, m->s}};
  dnnl_primitive_execute(m->p, st, 4, args);
}
template <class F>
double us(F f) {
  for (int i = 0; i < 50; i++) f();
  int it = 0;
  auto t0 = std::chrono::steady_clock::now();
  double el;
  do {
    for (int i = 0; i < 200; i++) f();
    it += 200;
    el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (el < 0.3);
  return el / it * 1e6;
}
int main() {
  dnnl_engine_create(&eng, dnnl_cpu, 0);
  dnnl_stream_create(&st, eng, dnnl_stream_default_flags);
  const int R = 128, BK = 256, HD = 64;
  std::mt19937 g(1);
  std::normal_distribution<float> nd(0, 1);
  auto bf = [&](float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
  };
  std::vector<uint16_t> q(R * HD), k(BK * HD), v(BK * HD), p(R * BK);
  for (auto& x : q) x = bf(nd(g));
  for (auto& x : k) x = bf(nd(g));
  for (auto& x : v) x = bf(nd(g));
  std::vector<float> s(R * BK), o(R * HD), m(R), l(R);
  MM* S = make(R, BK, HD, HD, 1, 1, HD, BK, false);
  MM* PV = make(R, HD, BK, BK, 1, HD, 1, HD, true);
  auto fn = online_softmax();
  auto softmax = [&] {
    for (int r = 0; r < R; r++) {
      m[r] = -INFINITY;
      l[r] = 0;
    }
    fn({s.data(), BK, R, BK, 0.125f, m.data(), l.data(), o.data(), HD, HD, p.data(), BK, BK});
  };
  run(S, q.data(), k.data(), s.data());
  std::vector<float> s0 = s;
  printf("S gemm   %.2f us\n", us([&] { run(S, q.data(), k.data(), s.data()); }));
  printf("softmax  %.2f us\n", us([&] {
           s = s0;
           softmax();
         }));
  printf("copy s   %.2f us\n", us([&] { s = s0; }));
  printf("PV gemm  %.2f us\n", us([&] { run(PV, p.data(), v.data(), o.data()); }));
  printf("step     %.2f us\n", us([&] {
           run(S, q.data(), k.data(), s.data());
           for (int r = 0; r < R; r++) {
             m[r] = -INFINITY;
             l[r] = 0;
           }
           fn({s.data(), BK, R, BK, 0.125f, m.data(), l.data(), o.data(), HD, HD, p.data(), BK, BK});
           run(PV, p.data(), v.data(), o.data());
         }));
}
