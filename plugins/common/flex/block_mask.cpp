#include <attnrt/extensions.hpp>
#include <attnrt_kernels/flex/block_mask.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace attnrt::kernels::flex {
namespace {

constexpr uint8_t kSkip = 0, kPartial = 1, kFull = 2;

// An int32 output with DLPack strides (elements; NULL: compact row-major).
class Out {
 public:
  explicit Out(DLTensor* t) : t_(t) {
    if (t == nullptr) return;
    data_ = reinterpret_cast<int32_t*>(static_cast<char*>(t->data) + t->byte_offset);
    int64_t compact = 1;
    for (int d = t->ndim - 1; d >= 0; --d) {
      stride_[d] = t->strides ? t->strides[d] : compact;
      compact *= t->shape[d];
    }
  }
  explicit operator bool() const { return t_ != nullptr; }
  int32_t& at(int64_t b, int64_t h, int64_t r, int64_t c = 0) const {
    return data_[b * stride_[0] + h * stride_[1] + r * stride_[2] + (t_->ndim == 4 ? c * stride_[3] : 0)];
  }

 private:
  DLTensor* t_;
  int32_t* data_ = nullptr;
  int64_t stride_[4] = {0, 0, 0, 0};
};

// One (count, indices) pair from the [bm, hm, mq, mk] states: per (b, h) and query block (key
// block, `transpose`), the blocks whose state is `value` or `also` in ascending order, zeros after.
void write_lists(const Out& num, const Out& idx, const std::vector<uint8_t>& state, int64_t bm, int64_t hm, int64_t mq,
                 int64_t mk, bool transpose, uint8_t value, uint8_t also, int threads) {
  if (!num) return;
  const int64_t rows = transpose ? mk : mq, cols = transpose ? mq : mk;
#pragma omp parallel for collapse(2) num_threads(threads)
  for (int64_t bh = 0; bh < bm * hm; ++bh) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = bh / hm, h = bh % hm;
      int32_t count = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t m = transpose ? c : r, n = transpose ? r : c;
        const uint8_t st = state[size_t((bh * mq + m) * mk + n)];
        if (st == value || st == also) idx.at(b, h, r, count++) = int32_t(c);
      }
      num.at(b, h, r) = count;
      for (int64_t c = count; c < cols; ++c) idx.at(b, h, r, c) = 0;
    }
  }
}

}  // namespace

void create_block_mask(const Eval& eval, bool has_mask_mod, const attnrt_attention_desc& d,
                       const attnrt_block_mask_args& a, int threads) {
  const attnrt_flex_attention& f = *sdk::flex_block(d);
  const int64_t bm = a.kv_num_blocks->shape[0], hm = a.kv_num_blocks->shape[1];
  const int64_t qb = f.q_block_size, kb = f.kv_block_size;
  const int64_t mq = (d.seqlen_q + qb - 1) / qb, mk = (d.seqlen_k + kb - 1) / kb;
  std::vector<uint8_t> state(size_t(bm * hm * mq * mk), kFull);
  if (has_mask_mod) {
#pragma omp parallel for collapse(2) schedule(dynamic) num_threads(threads)
    for (int64_t bh = 0; bh < bm * hm; ++bh) {
      for (int64_t m = 0; m < mq; ++m) {
        const int64_t b = bh / hm, h = bh % hm;
        const int64_t i0 = m * qb, i1 = std::min<int64_t>(d.seqlen_q, i0 + qb);
        for (int64_t n = 0; n < mk; ++n) {
          const int64_t j0 = n * kb, j1 = std::min<int64_t>(d.seqlen_k, j0 + kb);
          bool visible = false, hidden = false;
          for (int64_t i = i0; i < i1 && !(visible && hidden); ++i) {
            for (int64_t j = j0; j < j1 && !(visible && hidden); ++j) (eval.mask(b, h, i, j) ? visible : hidden) = true;
          }
          state[size_t((bh * mq + m) * mk + n)] = !visible ? kSkip : hidden ? kPartial : kFull;
        }
      }
    }
    eval.check_reads();
  }
  const bool full_kv = a.full_kv_num_blocks != nullptr, full_q = a.full_q_num_blocks != nullptr;
  // Without their full pair, the partial lists take the full blocks too (a valid, slower mask).
  write_lists(Out(a.kv_num_blocks), Out(a.kv_indices), state, bm, hm, mq, mk, false, kPartial,
              full_kv ? kPartial : kFull, threads);
  write_lists(Out(a.full_kv_num_blocks), Out(a.full_kv_indices), state, bm, hm, mq, mk, false, kFull, kFull, threads);
  write_lists(Out(a.q_num_blocks), Out(a.q_indices), state, bm, hm, mq, mk, true, kPartial, full_q ? kPartial : kFull,
              threads);
  write_lists(Out(a.full_q_num_blocks), Out(a.full_q_indices), state, bm, hm, mq, mk, true, kFull, kFull, threads);
}

}  // namespace attnrt::kernels::flex
