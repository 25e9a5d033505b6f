#include <attnrt_kernels/flex/eval.hpp>

#include <attnrt/validate.hpp>

namespace attnrt::kernels::flex {
namespace {

int32_t at(const DLTensor* t, std::initializer_list<int64_t> index) {
  int64_t offset = 0, d = 0;
  for (int64_t i : index) offset += i * stride_of(t, int(d++));
  return reinterpret_cast<const int32_t*>(tensor_base(t))[offset];
}

}  // namespace

Eval::Eval(const HostFns& fns, const attnrt_flex_attention& f, const attnrt_attention_desc& d) : fns_(fns) {
  for (int32_t i = 0; i < f.num_aux; ++i) {
    const DLTensor* t = f.aux[i];
    ctx_.aux[i] = tensor_base(t);
    for (int k = 0; k < t->ndim; ++k) {
      ctx_.shape[i][k] = t->shape[k];
      ctx_.stride[i][k] = stride_of(t, k);
    }
  }
  for (int32_t i = 0; i < f.num_scalars; ++i) ctx_.scalars[i] = f.scalars[i];
  ctx_.error = &error_;
  if (f.kv_num_blocks == nullptr) return;
  q_block_ = f.q_block_size;
  kv_block_ = f.kv_block_size;
  batch_ = f.kv_num_blocks->shape[0];
  heads_ = f.kv_num_blocks->shape[1];
  q_blocks_ = f.kv_num_blocks->shape[2];
  kv_blocks_ = (d.seqlen_k + kv_block_ - 1) / kv_block_;
  state_.assign(static_cast<size_t>(batch_ * heads_ * q_blocks_ * kv_blocks_), kSkip);
  mark(f.kv_num_blocks, f.kv_indices, "flex_attention.kv_num_blocks", "flex_attention.kv_indices", kPartial);
  // Full blocks after partial ones: a block in both lists is full (PyTorch's lists are disjoint).
  // (check_flex, which the SDK's adapter runs before a call reaches a plugin, holds every list to
  // kv_num_blocks' batch and head extents.)
  if (f.full_kv_num_blocks) {
    mark(f.full_kv_num_blocks, f.full_kv_indices, "flex_attention.full_kv_num_blocks", "flex_attention.full_kv_indices",
         kFull);
  }
}

void Eval::mark(const DLTensor* num, const DLTensor* indices, const char* num_name, const char* indices_name,
                uint8_t value) {
  const int64_t width = indices->shape[3];
  for (int64_t b = 0; b < batch_; ++b) {
    for (int64_t h = 0; h < heads_; ++h) {
      for (int64_t m = 0; m < q_blocks_; ++m) {
        const int32_t n = at(num, {b, h, m});
        if (n < 0 || n > width) {
          sdk::invalid(std::string(num_name) + "[" + std::to_string(b) + ", " + std::to_string(h) + ", " +
                       std::to_string(m) + "] = " + std::to_string(n) + " is outside [0, " + std::to_string(width) +
                       "] (the width of " + indices_name + ")");
        }
        for (int32_t t = 0; t < n; ++t) {
          const int32_t block = at(indices, {b, h, m, t});
          if (block < 0 || block >= kv_blocks_) {
            sdk::invalid(std::string(indices_name) + "[" + std::to_string(b) + ", " + std::to_string(h) + ", " +
                         std::to_string(m) + ", " + std::to_string(t) + "] = " + std::to_string(block) +
                         " is not a key block (seqlen_k " + std::to_string(kv_blocks_ * kv_block_) + " has " +
                         std::to_string(kv_blocks_) + " blocks of " + std::to_string(kv_block_) + ")");
          }
          state_[((b * heads_ + h) * q_blocks_ + m) * kv_blocks_ + block] = value;
        }
      }
    }
  }
}

void Eval::check_reads() const {
  if (error_ != 0) {
    sdk::invalid("flex_attention: a mod read aux" + std::to_string(error_ - 1) +
                 " outside its shape (an index < 0 or >= the extent); the call's result is not what the mods say");
  }
}

}  // namespace attnrt::kernels::flex
