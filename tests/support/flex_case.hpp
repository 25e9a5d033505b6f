// A flex_attention call's extension block with the tensors and strings it points at, and a
// block mask built from a per-block rule (as PyTorch's create_block_mask), for the CPU and GPU
// flex tests; `ref` holds the same rules as plain C++ for the fp64 reference.
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/harness/reference.hpp>
#include <attnrt/harness/workload.hpp>

#include <functional>
#include <string>
#include <vector>

namespace attnrt::test {

// A padded flex call's shape (varlen cases set seqlens_q / seqlens_k on top).
inline WorkloadSpec flex_shape(int batch, int sq, int sk, int hq, int hkv, int hd,
                               attnrt_dtype dtype = ATTNRT_DTYPE_FP32, bool backward = true) {
  WorkloadSpec s;
  s.batch = batch;
  s.seqlen_q = sq;
  s.seqlen_k = sk;
  s.heads_q = hq;
  s.heads_kv = hkv;
  s.head_dim = hd;
  s.dtype = dtype;
  s.backward = backward;
  return s;
}

// One flex block with the tensors it points at.
struct Flex {
  std::string score_mod, mask_mod, score_mod_grad;
  std::vector<HostTensor> aux;
  std::vector<float> scalars;
  int32_t q_block = 0, kv_block = 0;
  HostTensor kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices;
  ReferenceMods ref;

  attnrt_flex_attention block{};
  std::vector<const DLTensor*> aux_ptrs;

  // The block, pointing into this object (rebuilt on each call: the object may have moved).
  const attnrt_extension* attach(attnrt_attention_desc& d) {
    block = attnrt_flex_attention{};
    block.header = {sizeof(attnrt_flex_attention), ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION, 0, nullptr};
    block.score_mod = score_mod.empty() ? nullptr : score_mod.c_str();
    block.mask_mod = mask_mod.empty() ? nullptr : mask_mod.c_str();
    block.score_mod_grad = score_mod_grad.empty() ? nullptr : score_mod_grad.c_str();
    block.source_name = "flex_attention_test";
    aux_ptrs.clear();
    for (HostTensor& t : aux) aux_ptrs.push_back(t.dl());
    block.num_aux = static_cast<int32_t>(aux_ptrs.size());
    block.aux = aux_ptrs.data();
    block.num_scalars = static_cast<int32_t>(scalars.size());
    block.scalars = scalars.data();
    if (!kv_num_blocks.empty()) {
      block.q_block_size = q_block;
      block.kv_block_size = kv_block;
      block.kv_num_blocks = kv_num_blocks.dl();
      block.kv_indices = kv_indices.dl();
      block.full_kv_num_blocks = full_kv_num_blocks.empty() ? nullptr : full_kv_num_blocks.dl();
      block.full_kv_indices = full_kv_indices.empty() ? nullptr : full_kv_indices.dl();
    }
    d.extensions = &block.header;
    return &block.header;
  }
};

inline HostTensor i32(std::vector<int64_t> shape) { return HostTensor(std::move(shape), DLDataType{kDLInt, 32, 1}); }
inline HostTensor f32(std::vector<int64_t> shape) { return HostTensor(std::move(shape), DLDataType{kDLFloat, 32, 1}); }

// A block mask from a per-block rule (0 skip, 1 partial, 2 full), as create_block_mask builds
// one: [1, 1, q_blocks] counts and [1, 1, q_blocks, kv_blocks] indices, partial and full apart.
inline void set_block_mask(Flex& f, int sq, int sk, int qb, int kb, const std::function<int(int, int)>& rule) {
  const int mq = (sq + qb - 1) / qb, mk = (sk + kb - 1) / kb;
  f.q_block = qb;
  f.kv_block = kb;
  f.kv_num_blocks = i32({1, 1, mq});
  f.kv_indices = i32({1, 1, mq, mk});
  f.full_kv_num_blocks = i32({1, 1, mq});
  f.full_kv_indices = i32({1, 1, mq, mk});
  f.kv_indices.fill(-7);  // entries past the counts are never used (a kernel may read them)
  f.full_kv_indices.fill(-7);
  for (int m = 0; m < mq; ++m) {
    int partial = 0, full = 0;
    for (int n = mk - 1; n >= 0; --n) {  // any order: PyTorch's lists need not be sorted
      const int r = rule(m, n);
      if (r == 1) f.kv_indices.set(m * mk + partial++, n);
      if (r == 2) f.full_kv_indices.set(m * mk + full++, n);
    }
    f.kv_num_blocks.set(m, partial);
    f.full_kv_num_blocks.set(m, full);
  }
}

}  // namespace attnrt::test
