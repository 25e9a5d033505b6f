// block-mask: create_block_mask of ABI 1.4 called straight through the C table on the CPU, its
// lists compared with the ones a C++ classification of every pair gives (the independent side).
#include "block_mask_check.hpp"

#include "fixtures.hpp"
#include "isolation.hpp"

#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/runtime/backend.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <vector>

namespace attnrt::check {
namespace {

using Visible = std::function<bool(int64_t b, int64_t h, int64_t i, int64_t j)>;

struct Shape {
  int64_t bm, hm, sq, sk, qb, kb;
  int64_t mq() const { return (sq + qb - 1) / qb; }
  int64_t mk() const { return (sk + kb - 1) / kb; }
};

// 0 skipped, 1 partial, 2 full, per [bm, hm, mq, mk].
std::vector<int> classify(const Shape& s, const Visible& visible) {
  std::vector<int> state;
  for (int64_t b = 0; b < s.bm; ++b) {
    for (int64_t h = 0; h < s.hm; ++h) {
      for (int64_t m = 0; m < s.mq(); ++m) {
        for (int64_t n = 0; n < s.mk(); ++n) {
          bool seen = false, hidden = false;
          for (int64_t i = m * s.qb; i < std::min(s.sq, (m + 1) * s.qb); ++i) {
            for (int64_t j = n * s.kb; j < std::min(s.sk, (n + 1) * s.kb); ++j)
              (visible(b, h, i, j) ? seen : hidden) = true;
          }
          state.push_back(!seen ? 0 : hidden ? 1 : 2);
        }
      }
    }
  }
  return state;
}

struct Outputs {
  HostTensor kv_num, kv_idx, full_kv_num, full_kv_idx, q_num, q_idx, full_q_num, full_q_idx;
  explicit Outputs(const Shape& s) {
    const DLDataType i32{kDLInt, 32, 1};
    kv_num = HostTensor({s.bm, s.hm, s.mq()}, i32);
    full_kv_num = HostTensor({s.bm, s.hm, s.mq()}, i32);
    kv_idx = HostTensor({s.bm, s.hm, s.mq(), s.mk()}, i32);
    full_kv_idx = HostTensor({s.bm, s.hm, s.mq(), s.mk()}, i32);
    q_num = HostTensor({s.bm, s.hm, s.mk()}, i32);
    full_q_num = HostTensor({s.bm, s.hm, s.mk()}, i32);
    q_idx = HostTensor({s.bm, s.hm, s.mk(), s.mq()}, i32);
    full_q_idx = HostTensor({s.bm, s.hm, s.mk(), s.mq()}, i32);
    for (HostTensor* t : {&kv_num, &kv_idx, &full_kv_num, &full_kv_idx, &q_num, &q_idx, &full_q_num, &full_q_idx}) {
      t->fill(-7);  // so that a count or a zero left unwritten shows
    }
  }
};

// The lists of one pair against the states: rows of `rows` entries over `cols`, listing the
// states in `take` ascending, zeros after them.
void expect_lists(const char* name, const HostTensor& num, const HostTensor& idx, const std::vector<int>& state,
                  const Shape& s, bool transpose, std::vector<int> take) {
  const int64_t rows = transpose ? s.mk() : s.mq(), cols = transpose ? s.mq() : s.mk();
  for (int64_t bh = 0; bh < s.bm * s.hm; ++bh) {
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> want;
      for (int64_t c = 0; c < cols; ++c) {
        const int st = state[size_t((bh * s.mq() + (transpose ? c : r)) * s.mk() + (transpose ? r : c))];
        if (std::find(take.begin(), take.end(), st) != take.end()) want.push_back(c);
      }
      const int64_t got = int64_t(num.get(bh * rows + r));
      if (got != int64_t(want.size())) {
        throw CheckFailed(fmt::format("{} of (b, h) #{} row {}: {} entries, the classification of every pair gives {}",
                                      name, bh, r, got, want.size()));
      }
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t entry = int64_t(idx.get((bh * rows + r) * cols + c));
        const int64_t expect = c < int64_t(want.size()) ? want[size_t(c)] : 0;
        if (entry != expect) {
          throw CheckFailed(fmt::format("{}'s indices of (b, h) #{} row {}, entry {}: {}, expected {}", name, bh, r, c,
                                        entry, expect));
        }
      }
    }
  }
}

}  // namespace

std::string check_block_mask(const std::filesystem::path& lib) {
  RawPlugin raw(lib);
  const attnrt_plugin_api& api = raw.api();
  if (api.abi_minor < 4 || !ATTNRT_HAS_FIELD(&api, attnrt_plugin_api, create_block_mask)) {
    throw CheckSkipped(fmt::format("built against ABI {}.{}: create_block_mask (ABI 1.4) is never called on it",
                                   api.abi_major, api.abi_minor));
  }
  const attnrt_capabilities& caps = raw.lib->capabilities();
  if (!(caps.features & ATTNRT_FEATURE_CREATE_BLOCK_MASK)) {
    throw CheckSkipped("does not advertise ATTNRT_FEATURE_CREATE_BLOCK_MASK");
  }
  if (api.create_block_mask == nullptr) throw CheckFailed("advertises CREATE_BLOCK_MASK but its entry is NULL");
  if (!(caps.devices & ATTNRT_DEVICE_BIT_CPU)) throw CheckSkipped("CPU tensors only: the plugin is not a CPU plugin");

  const attnrt_dtype dt = first_dtype(caps);
  const WorkloadSpec spec = base_spec(caps, dt);
  attnrt_attention_desc d{};
  d.struct_size = sizeof d;
  d.dtype = dt;
  d.head_dim = d.head_dim_v = spec.head_dim;
  d.batch = 2;
  d.heads_q = d.heads_kv = 3;
  d.seqlen_q = 37;
  d.seqlen_k = 50;
  d.softmax_scale = 1.0f;
  d.window_left = d.window_right = -1;
  d.device = DLDevice{kDLCPU, 0};

  // A document mask with a per-head look-back: aux0 holds each sequence's document length,
  // scalar0 the look-back of head 1.
  HostTensor doc({2}, DLDataType{kDLInt, 32, 1});
  doc.set(0, 16);
  doc.set(1, 21);
  const DLTensor* aux[] = {doc.dl()};
  const float scalars[] = {9.0f};
  attnrt_flex_attention f{};
  f.header = {sizeof f, ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION, 0, nullptr};
  f.source_name = "attnrt check";
  f.mask_mod = "q_idx / aux0(b) == kv_idx / aux0(b) && kv_idx <= q_idx && (h != 1 || q_idx - kv_idx < (int)scalar0)";
  f.num_aux = 1;
  f.aux = aux;
  f.num_scalars = 1;
  f.scalars = scalars;
  f.q_block_size = 8;
  f.kv_block_size = 16;
  d.extensions = &f.header;
  const Visible visible = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
    const int64_t len = int64_t(doc.get(b));
    return i / len == j / len && j <= i && (h != 1 || i - j < 9);
  };
  const attnrt_exec exec{sizeof exec, nullptr, nullptr, 0, 1};

  auto build = [&](const char* name, const Shape& s, bool full, bool transposed) {
    report_case(name);
    Outputs o(s);
    attnrt_block_mask_args a{};
    a.struct_size = sizeof a;
    a.kv_num_blocks = o.kv_num.dl();
    a.kv_indices = o.kv_idx.dl();
    if (full) {
      a.full_kv_num_blocks = o.full_kv_num.dl();
      a.full_kv_indices = o.full_kv_idx.dl();
    }
    if (transposed) {
      a.q_num_blocks = o.q_num.dl();
      a.q_indices = o.q_idx.dl();
      if (full) {
        a.full_q_num_blocks = o.full_q_num.dl();
        a.full_q_indices = o.full_q_idx.dl();
      }
    }
    sdk::MessageBuffer err;
    if (api.create_block_mask(raw.inst, &d, &a, &exec, err.get()) != ATTNRT_OK) {
      throw CheckFailed(fmt::format("{}: create_block_mask failed: {}", name, err.text()));
    }
    return o;
  };

  const Shape per_head{2, 3, 37, 50, 8, 16};
  const std::vector<int> state = classify(per_head, visible);
  Outputs all = build("per sequence and head, every list", per_head, true, true);
  expect_lists("kv_num_blocks", all.kv_num, all.kv_idx, state, per_head, false, {1});
  expect_lists("full_kv_num_blocks", all.full_kv_num, all.full_kv_idx, state, per_head, false, {2});
  expect_lists("q_num_blocks", all.q_num, all.q_idx, state, per_head, true, {1});
  expect_lists("full_q_num_blocks", all.full_q_num, all.full_q_idx, state, per_head, true, {2});
  Outputs partial_only = build("without the full lists", per_head, false, true);
  expect_lists("kv_num_blocks", partial_only.kv_num, partial_only.kv_idx, state, per_head, false, {1, 2});
  expect_lists("q_num_blocks", partial_only.q_num, partial_only.q_idx, state, per_head, true, {1, 2});
  if (partial_only.full_kv_num.get(0) != -7) throw CheckFailed("wrote full_kv_num_blocks, which it was not given");

  // Broadcast over sequences and heads: mask_mod at b = 0, h = 0.
  const Shape broadcast{1, 1, 37, 50, 8, 16};
  const std::vector<int> state0 = classify(broadcast, visible);
  Outputs one = build("broadcast (B = 1, H = 1)", broadcast, true, false);
  expect_lists("kv_num_blocks", one.kv_num, one.kv_idx, state0, broadcast, false, {1});
  expect_lists("full_kv_num_blocks", one.full_kv_num, one.full_kv_idx, state0, broadcast, false, {2});

  f.mask_mod = nullptr;
  Outputs dense = build("no mask_mod: every block full", broadcast, true, false);
  const std::vector<int> all_full(state0.size(), 2);
  expect_lists("full_kv_num_blocks", dense.full_kv_num, dense.full_kv_idx, all_full, broadcast, false, {2});
  expect_lists("kv_num_blocks", dense.kv_num, dense.kv_idx, all_full, broadcast, false, {1});

  report_case("a flex block that already carries a block mask");
  f.kv_num_blocks = dense.kv_num.dl();
  f.kv_indices = dense.kv_idx.dl();
  Outputs o(broadcast);
  attnrt_block_mask_args a{sizeof a, o.kv_num.dl(), o.kv_idx.dl(), nullptr, nullptr,
                           nullptr,  nullptr,       nullptr,       nullptr};
  sdk::MessageBuffer bad;
  const attnrt_status status = api.create_block_mask(raw.inst, &d, &a, &exec, bad.get());
  if (status != ATTNRT_ERROR_INVALID_ARGUMENT || std::string(bad.text()).find("block-mask") == std::string::npos) {
    throw CheckFailed(fmt::format("a flex block with its own block mask gave {} '{}', not an invalid argument",
                                  status_name(status), bad.text()));
  }
  return "lists per (b, h) and broadcast, with and without the full and transposed pairs, match a classification of "
         "every pair; no mask_mod gives full blocks; a block mask in the flex block is refused ('" +
         std::string(bad.text()) + "')";
}

}  // namespace attnrt::check
