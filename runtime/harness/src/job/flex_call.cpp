// FlexCall (flex_config.hpp): a site's mods for one call shape. The mods are compiled for the
// host by the CPU plugin's compiler (kernels::flex::HostCompiler, under the harness's own cache
// key) and evaluated per element through kernels::flex::Eval's mask() and score(), which the fp64
// reference and the block-mask builder call; neither uses any plugin's attention loops.
#include <attnrt/harness/device_tensor.hpp>
#include <attnrt/harness/flex_config.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_kernels/flex/eval.hpp>
#include <attnrt_kernels/flex/host_compiler.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace attnrt {
namespace {

// The harness's compiler of mods: one per process, thread-safe, its compiled units cached on disk
// apart from the plugin's (another version in the key).
kernels::flex::HostCompiler& harness_compiler() {
  static kernels::flex::HostCompiler compiler("harness-reference-1");
  return compiler;
}

constexpr uint8_t kSkip = 0, kPartial = 1, kFull = 2;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

struct FlexCall::State {
  std::shared_ptr<const kernels::flex::CompiledMods> compiled;
  std::unique_ptr<kernels::flex::Eval> eval;  // the mods without a block mask
  std::string source_name;
  attnrt_flex_attention block{};
  std::vector<const DLTensor*> aux_ptrs;
  HostTensor kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices;
  // The same block with its tensors on a CUDA device, made on first attach there.
  DLDevice device{kDLCPU, 0};
  std::vector<DeviceTensor> device_aux;
  std::array<DeviceTensor, 4> device_mask;
  std::vector<const DLTensor*> device_aux_ptrs;
  attnrt_flex_attention device_block{};
};

FlexCall::FlexCall(const FlexSiteSpec& spec, const Workload& w) : spec_(spec), s_(std::make_unique<State>()) {
  const attnrt_attention_desc& d = w.desc;
  const std::string who = fmt::format("{}: attnrt.flex.{}", spec.where, spec.site);
  State& s = *s_;
  attnrt_flex_attention& f = s.block;
  f.header = {sizeof(attnrt_flex_attention), ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION, 0, nullptr};
  auto text = [](const FlexModSource& m) { return m.text.empty() ? nullptr : m.text.c_str(); };
  f.score_mod = text(spec.score_mod);
  f.mask_mod = text(spec.mask_mod);
  f.score_mod_grad = text(spec.score_mod_grad);
  s.source_name = spec.source_name();
  f.source_name = s.source_name.c_str();
  for (const HostTensor& t : spec.aux) s.aux_ptrs.push_back(t.dl());
  f.num_aux = static_cast<int32_t>(s.aux_ptrs.size());
  f.aux = s.aux_ptrs.data();
  f.num_scalars = static_cast<int32_t>(spec.scalars.size());
  f.scalars = spec.scalars.data();

  try {
    s.compiled = harness_compiler().get(kernels::flex::Mods::from_block(f));
    s.eval = std::make_unique<kernels::flex::Eval>(s.compiled->fns, f, d);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: {}", who, e.what()));
  }

  // Sequence lengths, as Workload counts its visible pairs (varlen, paged: each sequence's own).
  const int64_t B = d.batch, H = d.heads_q;
  std::vector<int64_t> ql(B, d.seqlen_q), kl(B, d.seqlen_k);
  for (int64_t b = 0; b < B; ++b) {
    if (d.is_varlen) ql[b] = int64_t(w.cu_seqlens_q.get(b + 1) - w.cu_seqlens_q.get(b));
    if (!w.seqused_k.empty())
      kl[b] = int64_t(w.seqused_k.get(b));
    else if (d.is_varlen)
      kl[b] = int64_t(w.cu_seqlens_k.get(b + 1) - w.cu_seqlens_k.get(b));
  }

  // The block mask from mask_mod, as PyTorch's create_block_mask: every pair of every block
  // evaluated (a block is partial as soon as it holds a visible and a hidden pair).
  const FlexBlockMaskSpec& bm = spec.block_mask;
  const int64_t qb = bm.q_block_size, kb = bm.kv_block_size;
  const int64_t Bm = bm.broadcast_batch ? 1 : B, Hm = bm.broadcast_heads ? 1 : H;
  const int64_t MQ = ceil_div(d.seqlen_q, qb), MK = ceil_div(d.seqlen_k, kb);
  std::vector<uint8_t> state(size_t(Bm * Hm * MQ * MK), kSkip);
  const kernels::flex::Eval& ev = *s.eval;
  const bool has_mask = !spec.mask_mod.text.empty();
#pragma omp parallel for collapse(3) schedule(dynamic)
  for (int64_t b = 0; b < Bm; ++b) {
    for (int64_t h = 0; h < Hm; ++h) {
      for (int64_t m = 0; m < MQ; ++m) {
        const int64_t qlen = bm.broadcast_batch ? d.seqlen_q : ql[b], klen = bm.broadcast_batch ? d.seqlen_k : kl[b];
        for (int64_t n = 0; n < MK; ++n) {
          const int64_t i0 = m * qb, i1 = std::min(qlen, i0 + qb), j0 = n * kb, j1 = std::min(klen, j0 + kb);
          if (i0 >= i1 || j0 >= j1) continue;  // past the sequence: nothing to visit
          if (!has_mask) {
            state[((b * Hm + h) * MQ + m) * MK + n] = kFull;
            continue;
          }
          bool seen_visible = false, seen_hidden = false;
          for (int64_t i = i0; i < i1 && !(seen_visible && seen_hidden); ++i) {
            for (int64_t j = j0; j < j1 && !(seen_visible && seen_hidden); ++j) {
              (ev.mask(b, h, i, j) ? seen_visible : seen_hidden) = true;
            }
          }
          state[((b * Hm + h) * MQ + m) * MK + n] = !seen_visible ? kSkip : seen_hidden ? kPartial : kFull;
        }
      }
    }
  }

  // Visible pairs: the descriptor's rule (bottom-right causal, window) and mask_mod, per element
  // in partial blocks; full blocks by the descriptor's rule alone; skipped blocks none.
  const int64_t right = sdk::effective_window_right(d);
  double pairs = 0;
#pragma omp parallel for collapse(2) schedule(dynamic) reduction(+ : pairs)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t bb = bm.broadcast_batch ? 0 : b, hh = bm.broadcast_heads ? 0 : h;
      for (int64_t m = 0; m < MQ; ++m) {
        for (int64_t n = 0; n < MK; ++n) {
          const uint8_t st = state[((bb * Hm + hh) * MQ + m) * MK + n];
          if (st == kSkip) continue;
          const int64_t i1 = std::min(ql[b], (m + 1) * qb), j0 = n * kb, j1 = std::min(kl[b], j0 + kb);
          for (int64_t i = m * qb; i < i1; ++i) {
            const int64_t diag = i + kl[b] - ql[b];
            const int64_t lo = std::max(j0, d.window_left >= 0 ? diag - d.window_left : j0);
            const int64_t hi = std::min(j1, right >= 0 ? diag + right + 1 : j1);
            if (st == kFull) {
              pairs += double(std::max<int64_t>(0, hi - lo));
              continue;
            }
            for (int64_t j = lo; j < hi; ++j) pairs += ev.mask(b, h, i, j) ? 1.0 : 0.0;
          }
        }
      }
    }
  }
  try {
    ev.check_reads();
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: while building the block mask from mask_mod: {}", who, e.what()));
  }
  visible_pairs_ = pairs;
  forward_flops_ = 2.0 * (d.head_dim + d.head_dim_v) * pairs;
  for (uint8_t st : state) ++blocks_[st];
  if (!bm.enabled) {
    blocks_[0] = blocks_[1] = blocks_[2] = 0;
    return;
  }

  // PyTorch's BlockMask tensors: per (b, h, query block) the partial key blocks and the full
  // ones, each in ascending order, entries past the count 0.
  const DLDataType i32{kDLInt, 32, 1};
  s.kv_num_blocks = HostTensor({Bm, Hm, MQ}, i32);
  s.full_kv_num_blocks = HostTensor({Bm, Hm, MQ}, i32);
  s.kv_indices = HostTensor({Bm, Hm, MQ, MK}, i32);
  s.full_kv_indices = HostTensor({Bm, Hm, MQ, MK}, i32);
  s.kv_indices.fill(0);
  s.full_kv_indices.fill(0);
  for (int64_t row = 0; row < Bm * Hm * MQ; ++row) {
    int32_t partial = 0, full = 0;
    for (int64_t n = 0; n < MK; ++n) {
      const uint8_t st = state[row * MK + n];
      if (st == kPartial) s.kv_indices.data_as<int32_t>()[row * MK + partial++] = int32_t(n);
      if (st == kFull) s.full_kv_indices.data_as<int32_t>()[row * MK + full++] = int32_t(n);
    }
    s.kv_num_blocks.data_as<int32_t>()[row] = partial;
    s.full_kv_num_blocks.data_as<int32_t>()[row] = full;
  }
  f.q_block_size = static_cast<int32_t>(qb);
  f.kv_block_size = static_cast<int32_t>(kb);
  f.kv_num_blocks = s.kv_num_blocks.dl();
  f.kv_indices = s.kv_indices.dl();
  f.full_kv_num_blocks = s.full_kv_num_blocks.dl();
  f.full_kv_indices = s.full_kv_indices.dl();
}

FlexCall::~FlexCall() = default;

void FlexCall::attach(attnrt_attention_desc& desc, DLDevice device) {
  State& s = *s_;
  if (device.device_type != kDLCUDA) {
    desc.extensions = &s.block.header;
    return;
  }
  if (s.device.device_type != kDLCUDA || s.device.device_id != device.device_id) {
    s.device = device;
    s.device_aux.clear();
    s.device_aux_ptrs.clear();
    for (const HostTensor& t : spec_.aux) s.device_aux.emplace_back(t, device);
    for (DeviceTensor& t : s.device_aux) s.device_aux_ptrs.push_back(t.dl());
    s.device_block = s.block;
    s.device_block.aux = s.device_aux_ptrs.data();
    if (s.block.kv_num_blocks != nullptr) {
      const HostTensor* host[4] = {&s.kv_num_blocks, &s.kv_indices, &s.full_kv_num_blocks, &s.full_kv_indices};
      for (int i = 0; i < 4; ++i) s.device_mask[size_t(i)] = DeviceTensor(*host[i], device);
      s.device_block.kv_num_blocks = s.device_mask[0].dl();
      s.device_block.kv_indices = s.device_mask[1].dl();
      s.device_block.full_kv_num_blocks = s.device_mask[2].dl();
      s.device_block.full_kv_indices = s.device_mask[3].dl();
    }
  }
  desc.extensions = &s.device_block.header;
}

ReferenceMods FlexCall::reference_mods() const {
  ReferenceMods r;
  const kernels::flex::Eval* e = s_->eval.get();
  if (!spec_.score_mod.text.empty()) {
    r.score = [e](double s, int64_t b, int64_t h, int64_t i, int64_t j) {
      return double(e->score(float(s), b, h, i, j));
    };
  }
  if (!spec_.mask_mod.text.empty()) {
    r.visible = [e](int64_t b, int64_t h, int64_t i, int64_t j) { return e->mask(b, h, i, j); };
  }
  if (!spec_.score_mod_grad.text.empty()) {
    r.grad = [e](double s, int64_t b, int64_t h, int64_t i, int64_t j) {
      return double(e->grad(float(s), b, h, i, j));
    };
  }
  return r;
}

void FlexCall::check_reads() const {
  try {
    s_->eval->check_reads();
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: attnrt.flex.{}: in the reference: {}", spec_.where, spec_.site, e.what()));
  }
}

std::string FlexCall::backward_refusal() const {
  if (spec_.score_mod.text.empty() || !spec_.score_mod_grad.text.empty()) return "";
  return fmt::format(
      "backward not run: attnrt.flex.{} gives a score_mod without score_mod_grad (d score_mod / d score), which a "
      "flex_attention backward needs",
      spec_.site);
}

std::string FlexCall::describe() const {
  std::string s = spec_.summary();
  const int64_t total = blocks_[0] + blocks_[1] + blocks_[2];
  if (total > 0) {
    s += fmt::format(" ({} of {} blocks skipped, {} full, {} partial)", blocks_[0], total, blocks_[2], blocks_[1]);
  }
  return s + fmt::format("; {:.4g} visible (query, key) pairs over heads", visible_pairs_);
}

}  // namespace attnrt
