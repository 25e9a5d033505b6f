#include <oneapi/dnnl/dnnl.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>
#define CK(x)                           \
  do {                                  \
    dnnl_status_t s_ = (x);             \
    if (s_) {                           \
      printf("fail %s = %d\n", #x, s_); \
      return 1;                         \
    }                                   \
  } while (0)
int main() {
  dnnl_engine_t eng;
  CK(dnnl_engine_create(&eng, dnnl_cpu, 0));
  dnnl_stream_t st;
  CK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
  int shapes[][4] = {{128, 256, 64, 0}, {128, 64, 256, 1}};
  for (auto& sh : shapes)
    for (int packed = 0; packed < 2; ++packed) {
      int M = sh[0], N = sh[1], K = sh[2];
      bool acc = sh[3];
      dnnl_memory_desc_t a, b, c, bplain;
      dnnl_dims_t da = {M, K}, db = {K, N}, dc = {M, N};
      dnnl_dims_t sa = {K, 1}, sb = {1, K}, sc = {N, 1};
      if (acc) {
        sb[0] = N;
        sb[1] = 1;
      }
      CK(dnnl_memory_desc_init_by_strides(&a, 2, da, dnnl_bf16, sa));
      CK(dnnl_memory_desc_init_by_strides(&bplain, 2, db, dnnl_bf16, sb));
      if (packed)
        CK(dnnl_memory_desc_init_by_tag(&b, 2, db, dnnl_bf16, dnnl_format_tag_any));
      else
        b = bplain;
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
      const char* impl;
      CK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
      const dnnl_memory_desc_t* wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
      size_t wsize = dnnl_memory_desc_get_size(wmd);
      const dnnl_memory_desc_t* smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
      size_t ss = dnnl_memory_desc_get_size(smd);
      dnnl_primitive_t p;
      CK(dnnl_primitive_create(&p, pd));
      std::vector<uint16_t> A(M * K, 0x3f80), B(K * N, 0x3f80), Bp(wsize / 2 + 64);
      std::vector<float> C(M * N);
      std::vector<char> S(ss + 64);
      dnnl_memory_t ma, mb, mc, ms;
      CK(dnnl_memory_create(&ma, &a, eng, DNNL_MEMORY_NONE));
      CK(dnnl_memory_create(&mb, wmd, eng, DNNL_MEMORY_NONE));
      CK(dnnl_memory_create(&mc, &c, eng, DNNL_MEMORY_NONE));
      CK(dnnl_memory_create(&ms, smd, eng, DNNL_MEMORY_NONE));
      if (packed) {  // reorder plain -> packed
        dnnl_primitive_desc_t rpd;
        CK(dnnl_reorder_primitive_desc_create(&rpd, &bplain, eng, wmd, eng, nullptr));
        dnnl_primitive_t r;
        CK(dnnl_primitive_create(&r, rpd));
        dnnl_memory_t src, dst;
        CK(dnnl_memory_create(&src, &bplain, eng, B.data()));
        CK(dnnl_memory_create(&dst, wmd, eng, Bp.data()));
        dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
        CK(dnnl_primitive_execute(r, st, 2, ra));
      }
      void* bptr = packed ? (void*)Bp.data() : (void*)B.data();
      auto run = [&] {
        dnnl_memory_set_data_handle(ma, A.data());
        dnnl_memory_set_data_handle(mb, bptr);
        dnnl_memory_set_data_handle(mc, C.data());
        dnnl_memory_set_data_handle(ms, S.data());
        dnnl_exec_arg_t args[4] = {
            {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}, {DNNL_ARG_SCRATCHPAD, ms}};
        return dnnl_primitive_execute(p, st, 4, args);
      };
      CK(run());
      int it = 0;
      auto t0 = std::chrono::steady_clock::now();
      double el;
      do {
        for (int i = 0; i < 100; i++) run();
        it += 100;
        el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      } while (el < 0.3);
      printf("%dx%dx%d acc%d packed%d %s wsize %zu scratch %zu: %.2f us/call %.1f GFLOP/s C0=%g\n", M, N, K, acc,
             packed, impl, wsize, ss, el / it * 1e6, 2.0 * M * N * K * it / el * 1e-9, C[0]);
    }
}
