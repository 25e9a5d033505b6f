// The KV-cache append on the CPU (plugin ABI 1.2, attnrt_append_kv_args): token n of k_new /
// v_new [num_tokens, heads_kv, head_dim(_v)] is copied to row slot_mapping[n] % page_size of page
// slot_mapping[n] / page_size of k_cache / v_cache [num_pages, page_size, heads_kv, head_dim(_v)];
// a negative slot (a padding token) is skipped (vLLM's reshape_and_cache). Arguments are checked
// by attnrt::sdk::check_append_kv first (plugin.hpp's adapter does it).
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt_kernels/layout.hpp>

#include <cstdint>
#include <cstring>

namespace attnrt::kernels {

inline void append_kv(const attnrt_attention_desc& d, const attnrt_append_kv_args& a) {
  const int64_t tokens = a.k_new->shape[0];
  const auto* slots = reinterpret_cast<const int64_t*>(tensor_base(a.slot_mapping));
  const int64_t slot_stride = stride_of(a.slot_mapping, 0);
  const int64_t elem = a.k_new->dtype.bits / 8;
  auto copy = [&](const DLTensor* src, DLTensor* dst, int64_t n, int64_t page, int64_t row, int32_t dim) {
    const char* s = tensor_base(src) + n * stride_of(src, 0) * elem;
    char* t = const_cast<char*>(tensor_base(dst)) + (page * stride_of(dst, 0) + row * stride_of(dst, 1)) * elem;
    for (int64_t h = 0; h < d.heads_kv; ++h) {
      std::memcpy(t + h * stride_of(dst, 2) * elem, s + h * stride_of(src, 1) * elem, static_cast<size_t>(dim * elem));
    }
  };
  for (int64_t n = 0; n < tokens; ++n) {
    const int64_t slot = slots[n * slot_stride];
    if (slot < 0) continue;
    copy(a.k_new, a.k_cache, n, slot / d.page_size, slot % d.page_size, d.head_dim);
    copy(a.v_new, a.v_cache, n, slot / d.page_size, slot % d.page_size, d.head_dim_v);
  }
}

}  // namespace attnrt::kernels
