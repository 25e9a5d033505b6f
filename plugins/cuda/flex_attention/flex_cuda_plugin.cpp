// flex_attention on CUDA (ABI 1.3's flex block, plugin_abi.h attnrt_flex_attention): PyTorch
// FlexAttention's score_mod and mask_mod compiled by NVRTC into flash_attention_2's forward and
// backward kernels under the flex score policy (flex_policy.cuh), with the block mask's skipped
// tiles never computed and its full tiles spared mask_mod. On sm_90 the forward and backward are
// flash_attention_3's instead (TMA, wgmma, warp specialization), linked with the mods by
// nvJitLink (hopper_module.hpp) where this build has their variants. Kernels are compiled when a call
// shape (mods, dtype, head_dim, GPU arch) is first prepared, in supports(), and kept in the disk
// cache. Backward needs score_mod_grad with a score_mod (refused without, as on the CPU).
// create_block_mask (ABI 1.4) runs mask_mod in the same module (flex_block_mask.cuh).
#include "hopper_module.hpp"
#include "kernel_module.hpp"
#include "module_memo.hpp"
#include "rows_choice.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_cuda/backward_workspace.hpp>
#include <attnrt_cuda/cuda_check.hpp>
#include <attnrt_cuda/hopper/l2_bands.hpp>
#include <attnrt_cuda/hopper/tensor_map.hpp>
#include <attnrt_cuda/make_params.hpp>
#include <attnrt_kernels/flex/prelude_host.hpp>

#include "flex_params.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace attnrt::plugins::flex_cuda {
namespace {

using cuda::check_cuda;

int64_t stride(const DLTensor* t, int d) { return cuda::detail::stride_of(*t, d); }
int ceil_div(int64_t a, int64_t b) { return static_cast<int>((a + b - 1) / b); }

// A block-mask list as the tile-state kernel reads it (flex_params.h).
attnrt_flex::List flex_list(const DLTensor* num, const DLTensor* idx) {
  attnrt_flex::List l{};
  l.num = static_cast<const int*>(cuda::detail::data_of(num));
  l.idx = static_cast<const int*>(cuda::detail::data_of(idx));
  for (int d = 0; d < 3; ++d) l.num_stride[d] = num->shape[d] == 1 ? 0 : stride(num, d);
  for (int d = 0; d < 4; ++d) l.idx_stride[d] = (d < 2 && idx->shape[d] == 1) ? 0 : stride(idx, d);
  l.width = static_cast<int>(idx->shape[3]);
  return l;
}

// An output pair of create_block_mask as flex_block_mask.cuh's AttnrtFlexOut reads it.
struct FlexOut {
  int* num;
  int* idx;
  long long num_stride[3], idx_stride[4];
};

FlexOut flex_out(const DLTensor* num, const DLTensor* idx) {
  FlexOut o{};
  if (num == nullptr) return o;
  o.num = static_cast<int*>(cuda::detail::data_of(num));
  o.idx = static_cast<int*>(cuda::detail::data_of(idx));
  for (int d = 0; d < 3; ++d) o.num_stride[d] = stride(num, d);
  for (int d = 0; d < 4; ++d) o.idx_stride[d] = stride(idx, d);
  return o;
}

struct FlexMaskShape {
  int bm, hm, mq, mk, seqlen_q, seqlen_k, q_block, kv_block, has_mask, full_kv, full_q;
};

class FlexAttentionCuda {
 public:
  static constexpr const char* kName = "flex_attention";
  static constexpr const char* kVersion = "0.4.0";
  static constexpr const char* kDescription =
      "PyTorch FlexAttention's score_mod / mask_mod / block mask compiled by NVRTC into flash_attention_2's forward "
      "and backward (sm_80+); on sm_90 flash_attention_3's forward and backward, linked with the mods by nvJitLink";
  static constexpr uint32_t kExtensions[] = {ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION};
  static constexpr attnrt_capabilities kCapabilities =
      sdk::capabilities({.devices = ATTNRT_DEVICE_BIT_CUDA,
                         .dtypes = ATTNRT_DTYPE_BIT_FP16 | ATTNRT_DTYPE_BIT_BF16,
                         .features = ATTNRT_FEATURE_GQA | ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SLIDING_WINDOW |
                                     ATTNRT_FEATURE_VARLEN | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_FLEX_ATTENTION |
                                     ATTNRT_FEATURE_BACKWARD | ATTNRT_FEATURE_CREATE_BLOCK_MASK,
                         .min_head_dim = 64,
                         .max_head_dim = 128,
                         .min_cuda_arch = 80});

  FlexAttentionCuda() : modules_(kVersion), hopper_(kVersion) {}

  std::string supports(const attnrt_attention_desc& d) const {
    if (d.head_dim != 64 && d.head_dim != 128) {
      return "head_dim " + std::to_string(d.head_dim) + ": flex_attention on CUDA compiles head_dim 64 and 128";
    }
    const ForwardTile tile = forward_tile(d.head_dim);
    if (const attnrt_flex_attention* f = sdk::flex_block(d); f && f->kv_num_blocks) {
      if (f->q_block_size % tile.bm != 0 || f->kv_block_size % tile.bn != 0) {
        return "block mask of " + std::to_string(f->q_block_size) + " x " + std::to_string(f->kv_block_size) +
               " blocks: flex_attention on CUDA needs multiples of its " + std::to_string(tile.bm) + " x " +
               std::to_string(tile.bn) + " tiles at head_dim " + std::to_string(d.head_dim) +
               " (PyTorch's default 128 x 128 is)";
      }
    }
    try {
      module(d);
      // The forward's 192-row variant too where a call of these mods may take it (forward_rows),
      // so that no call links a kernel.
      if (hopper_module(d, false) && may_take_tall(d)) hopper_module(d, false, 192);
      hopper_module(d, true);
    } catch (const sdk::Error& e) {
      return e.what();
    }
    return "";
  }

  // Forward: the Hopper kernel's tile counter and tile heights' walks (kWalksAt), then the block states. Backward:
  // flash_attention_2's backward workspace (D and the fp32 dQ accumulator), then the block states.
  size_t workspace_size(const attnrt_attention_desc& d, bool backward, int /*num_threads*/) const {
    return states_offset(d, backward) + states_bytes(d);
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    cuda::use_device(d);
    const std::shared_ptr<const KernelModule> m = module(d);
    const cuda::AttentionParams p = cuda::make_params(d, a, kRowAlignment);
    if (p.seqlen_q == 0 || p.batch == 0) return;
    sdk::require_workspace(e, workspace_size(d, false, 0), 0);
    const std::shared_ptr<const HopperModule> hm = hopper_module(d, false);
    int32_t* counter = hm ? static_cast<int32_t*>(e.workspace) : nullptr;
    Rows rows = hm ? forward_rows(d) : Rows::k128;
    // (A 192-row variant that does not link leaves the call on 128 rows, as hopper_module leaves
    // a call that cannot take the Hopper kernels on flash_attention_2's; then nothing is summed.)
    const std::shared_ptr<const HopperModule> tall = rows == Rows::k128 ? nullptr : hopper_module(d, false, 192);
    RowsChoices::Key choice;  // (empty: none remembered, as under stream capture)
    if (rows == Rows::kChoose && tall && !capturing(stream(e))) {
      choice = RowsChoices::key(hm.get(), d, *sdk::flex_block(d));
      const int chosen = choices_.chosen(choice);  // this block mask's, where made before
      if (chosen) rows = chosen == 192 ? Rows::k192 : Rows::k128;
    }
    unsigned long long* walks = rows == Rows::kChoose && tall
                                    ? reinterpret_cast<unsigned long long*>(static_cast<char*>(e.workspace) + kWalksAt)
                                    : nullptr;
    if (walks) {  // attnrt_flex_block_states adds to the sums
      check_cuda(cudaMemsetAsync(walks, 0, 2 * sizeof(*walks), stream(e)),
                 "flex_attention forward: clearing the walks");
    }
    attnrt_flex::KernelParams x = kernel_params(d, *m, e, states_offset(d, false), counter, walks);
    if (walks) {
      // Both kernels, of which the one whose tiles cost less over the block mask runs and the
      // other returns at once (rows_chosen; attnrt_flex_block_states summed the costs), and the
      // sums back to the host for this block mask's later calls (rows_choice.hpp).
      x.tile_walks = walks;
      if (!choice.empty()) choices_.fetch(choice, walks, stream(e));
      hopper_forward(d, a, e, *tall, x);
      hopper_forward(d, a, e, *hm, x);
      return;
    }
    if (hm) {
      hopper_forward(d, a, e, rows != Rows::k128 && tall ? *tall : *hm, x);
      return;
    }
    set_smem(m->forward, m->tile.smem_bytes(d.head_dim), d, "flex_attention forward: shared memory");
    const dim3 grid(ceil_div(p.seqlen_q, m->tile.bm), p.heads_q, p.batch);
    void* args[] = {const_cast<cuda::AttentionParams*>(&p), const_cast<attnrt_flex::KernelParams*>(&x)};
    check_cuda(cudaLaunchKernel(reinterpret_cast<const void*>(m->forward), grid, dim3(m->tile.threads()), args,
                                m->tile.smem_bytes(d.head_dim), stream(e)),
               "flex_attention forward");
  }

  // flash_attention_2's backward (FlashAttention-2, Algorithm 2) under the flex policy: D, then
  // one CTA per key block accumulating dK, dV and (atomically, in fp32) dQ over the query tiles
  // the block mask does not skip, then dQ's conversion. On sm_90 the middle kernel is
  // flash_attention_3's (hopper_dkdv) where the call can take it.
  void backward(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e) {
    const char* what = "flex_attention backward";
    if (const attnrt_flex_attention* f = sdk::flex_block(d);
        f && f->score_mod && *f->score_mod && !(f->score_mod_grad && *f->score_mod_grad)) {
      throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED,
                       "flex_attention backward with a score_mod needs score_mod_grad (d score_mod / d score), "
                       "which the call does not give");
    }
    if (d.deterministic) {
      throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED,
                       "flex_attention on CUDA has no deterministic backward (dQ is accumulated with atomics)");
    }
    cuda::use_device(d);
    const std::shared_ptr<const KernelModule> m = module(d);
    cuda::AttentionParams p = cuda::make_params(d, a, kRowAlignment);
    sdk::require_workspace(e, workspace_size(d, true, 0), 0);
    cuda::BackwardWorkspace::bind(d, e, p);
    if (cuda::BackwardWorkspace::nothing_to_differentiate(p, stream(e), what)) return;
    const std::shared_ptr<const HopperModule> hopper = hopper_module(d, true);
    const Dkdv path = hopper ? Dkdv::kHopper : dkdv_path(d, *m);
    const attnrt_flex::KernelParams x = kernel_params(d, *m, e, states_offset(d, true), nullptr);
    void* args[] = {&p, const_cast<attnrt_flex::KernelParams*>(&x)};
    const dim3 rows(ceil_div(p.seqlen_q, 4), p.heads_q, p.batch);  // one warp per query row
    if (p.seqlen_q > 0) {
      launch(m->softmax_d, rows, 128, 0, args, e, what);  // zeroes dq_accum's rows too
    }
    const BackwardShapes& s = m->backward;
    if (p.seqlen_k > 0) {
      if (path == Dkdv::kHopper) {
        hopper_dkdv(d, a, e, *hopper, x, p);
      } else if (path == Dkdv::kWide) {
        set_smem(m->dkdv_wide, s.wide_smem, d, what);
        launch(m->dkdv_wide, dim3(ceil_div(p.seqlen_k, s.wide_bn), p.heads_kv, p.batch), s.wide_threads, s.wide_smem,
               args, e, what);
      } else {
        const dim3 grid(ceil_div(p.seqlen_k, s.split_bn), p.heads_kv, p.batch);
        set_smem(m->dkdv_split_dv, s.split_dv_smem, d, what);
        set_smem(m->dkdv_split_dk, s.split_dk_smem, d, what);
        launch(m->dkdv_split_dv, grid, s.split_threads, s.split_dv_smem, args, e, what);
        launch(m->dkdv_split_dk, grid, s.split_threads, s.split_dk_smem, args, e, what);
      }
    }
    // dq from the accumulator: the Hopper kernel's swizzled layout, or flash_attention_2's.
    if (p.seqlen_q > 0) launch(hopper ? m->dq_convert_swizzled : m->dq_convert, rows, 128, 0, args, e, what);
  }

  // PyTorch's create_block_mask (flex_block_mask.cuh): classify every block into kv_indices,
  // transpose into q_* when asked, compact the rows in place. The mask_mod is compiled into a
  // module of these kernels alone (once per mask_mod, aux signature and GPU arch; disk-cached).
  void create_block_mask(const attnrt_attention_desc& d, const attnrt_block_mask_args& a, const attnrt_exec& e) {
    const char* what = "flex_attention create_block_mask";
    cuda::use_device(d);
    ModuleKey key;
    key.mods = kernels::flex::Mods::from_block(*sdk::flex_block(d));
    key.arch = d.cuda_arch;
    key.mask_only = true;
    const std::shared_ptr<const KernelModule> m = modules_.get(key);
    const attnrt_flex_attention& f = *sdk::flex_block(d);
    FlexMaskShape s{};
    s.bm = static_cast<int>(a.kv_num_blocks->shape[0]);
    s.hm = static_cast<int>(a.kv_num_blocks->shape[1]);
    s.mq = ceil_div(d.seqlen_q, f.q_block_size);
    s.mk = ceil_div(d.seqlen_k, f.kv_block_size);
    s.seqlen_q = d.seqlen_q;
    s.seqlen_k = d.seqlen_k;
    s.q_block = f.q_block_size;
    s.kv_block = f.kv_block_size;
    s.has_mask = f.mask_mod && *f.mask_mod;
    s.full_kv = a.full_kv_num_blocks != nullptr;
    s.full_q = a.full_q_num_blocks != nullptr;
    const int64_t blocks = int64_t(s.bm) * s.hm * s.mq * s.mk;
    if (blocks == 0) return;
    attnrt_flex::Context ctx = context(f);
    FlexOut kv = flex_out(a.kv_num_blocks, a.kv_indices), full_kv = flex_out(a.full_kv_num_blocks, a.full_kv_indices);
    FlexOut q = flex_out(a.q_num_blocks, a.q_indices), full_q = flex_out(a.full_q_num_blocks, a.full_q_indices);
    void* classify[] = {&ctx, &kv, &s};
    launch(m->mask_classify, dim3(static_cast<unsigned>(std::min<int64_t>(blocks, 1 << 20))), 128, 0, classify, e,
           what);
    const int threads = 128;
    if (q.num != nullptr) {
      void* columns[] = {&kv, &q, &full_q, &s};
      launch(m->mask_columns, dim3(ceil_div(int64_t(s.bm) * s.hm * s.mk, threads)), threads, 0, columns, e, what);
    }
    void* rows[] = {&kv, &full_kv, &s};
    launch(m->mask_rows, dim3(ceil_div(int64_t(s.bm) * s.hm * s.mq, threads)), threads, 0, rows, e, what);
  }

 private:
  static constexpr size_t kRowAlignment = 16;  // cp.async moves 16 bytes; TMA's rows too
  // The forward's workspace header: the Hopper forward's tile counter (int32 at 0) and the walks of
  // its two tile heights (two uint64 at kWalksAt), then the block states.
  static constexpr size_t kTileCounterBytes = 256, kWalksAt = 8;
  // attnrt_flex_block_states' ATTNRT_FLEX_WALK_KEY_BLOCKS and ATTNRT_FLEX_STATE_THREADS (flex_policy.cuh).
  static constexpr int kWalkKeyBlocks = 1024, kStateThreads = 128;

  // The Hopper forward's tile height for a call: 128 rows, 192 (head_dim 64), or both kernels
  // launched with the choice left to the GPU, which has the block mask's statistics
  // (rows_chosen in flex_hopper_policy.cuh).
  enum class Rows { k128, k192, kChoose };
  // At head_dim 64: with a block mask, the GPU's choice, at any length (made once per mods and
  // block mask: rows_choice.hpp; bench/results/flex-lead-2026-11-27/); without one, 192 rows from
  // 4096 query rows (every tile visits every block, or a causal triangle's: 192 rows faster at 8k
  // and 16k keys, within a few percent either way at 2k, bench/results/flex-rows192-2026-11-26/).
  // With a window, 128 (flash_attention_3's window rule, which the walks also apply, is not in
  // the choice's sums). ATTNRT_FLEX_ROWS=128|192|auto overrides it at head_dim 64 (auto: 192
  // rows without a block mask at any length too; 128 also skips linking the 192-row variant when
  // a shape is prepared, so set it before then).
  static std::string forced_rows() {
    const char* env = std::getenv("ATTNRT_FLEX_ROWS");
    return env ? env : "";
  }
  // Whether a call of these mods, dtype and head_dim may take 192 rows (at some length).
  static bool may_take_tall(const attnrt_attention_desc& d, const std::string& forced = forced_rows()) {
    return d.head_dim == 64 && forced != "128" &&
           hopper_blob(false, d.dtype == ATTNRT_DTYPE_BF16, 64, has_score_mod(d), 192);
  }
  static Rows forward_rows(const attnrt_attention_desc& d) {
    const std::string forced = forced_rows();
    if (!may_take_tall(d, forced)) return Rows::k128;
    if (forced == "192") return Rows::k192;
    if (d.window_left >= 0 || (d.window_right >= 0 && !d.causal)) return Rows::k128;  // measured for neither
    const attnrt_flex_attention* f = sdk::flex_block(d);
    if (!f || !f->kv_num_blocks) return forced == "auto" || d.seqlen_q >= 4096 ? Rows::k192 : Rows::k128;
    // attnrt_flex_block_states' bitmap of the keys holds ATTNRT_FLEX_WALK_KEY_BLOCKS blocks (the
    // kernel counts nothing past it, which leaves 128 rows); longer masks stay on 128 rows here.
    return ceil_div(d.seqlen_k, int64_t(f->kv_block_size)) <= kWalkKeyBlocks ? Rows::kChoose : Rows::k128;
  }
  static bool has_score_mod(const attnrt_attention_desc& d) {
    const attnrt_flex_attention* f = sdk::flex_block(d);
    return f && f->score_mod && *f->score_mod;
  }
  enum class Dkdv { kHopper, kWide, kSplit };

  static cudaStream_t stream(const attnrt_exec& e) { return static_cast<cudaStream_t>(e.stream); }
  // Whether `s` is capturing a graph (as far as this call can tell: an error counts as capturing).
  static bool capturing(cudaStream_t s) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &status) != cudaSuccess) {
      (void)cudaGetLastError();
      return true;
    }
    return status != cudaStreamCaptureStatusNone;
  }

  // Raises a kernel's dynamic shared memory limit on d's device, once: the attribute stays set,
  // and setting it on every call was host time each call paid.
  void set_smem(cudaKernel_t k, size_t bytes, const attnrt_attention_desc& d, const char* what) const {
    const auto key = std::make_tuple(reinterpret_cast<const void*>(k), d.device.device_id, bytes);
    std::lock_guard<std::mutex> lock(attributes_mutex_);
    if (smem_set_.count(key)) return;
    check_cuda(cudaFuncSetAttribute(reinterpret_cast<const void*>(k), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(bytes)),
               what);
    smem_set_.insert(key);
  }
  // The device's SM count, asked once per device.
  int sm_count(const attnrt_attention_desc& d, const char* what) const {
    std::lock_guard<std::mutex> lock(attributes_mutex_);
    int& sms = sm_counts_[d.device.device_id];
    if (sms == 0) check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d.device.device_id), what);
    return sms;
  }
  // dependent: a programmatic dependent launch of the kernel before it on the stream, whose CTAs
  // may start while that one runs (the kernel waits for it with griddepcontrol.wait before it
  // reads what that one wrote).
  static void launch(cudaKernel_t k, dim3 grid, int threads, size_t smem, void** args, const attnrt_exec& e,
                     const char* what, bool dependent = false) {
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem;
    config.stream = stream(e);
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    if (dependent) {
      config.attrs = &attribute;
      config.numAttrs = 1;
    }
    check_cuda(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(k), args), what);
  }

  // The dK/dV kernel: flash_attention_2's wide one where the GPU has sm_90's shared memory (as
  // flash_attention_2 picks; ATTNRT_FA2_BACKWARD=split forces the other, for tests) and the block
  // mask's blocks are whole tiles of it, else the split pair; refused when neither fits.
  Dkdv dkdv_path(const attnrt_attention_desc& d, const KernelModule& m) const {
    const BackwardShapes& s = m.backward;
    const attnrt_flex_attention* f = sdk::flex_block(d);
    const bool masked = f && f->kv_num_blocks;
    auto fits = [&](int bm, int bn) { return !masked || (f->q_block_size % bm == 0 && f->kv_block_size % bn == 0); };
    const char* force = std::getenv("ATTNRT_FA2_BACKWARD");
    int optin = 0;
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, d.device.device_id);
    if (m.dkdv_wide && !(force && std::string(force) == "split") && size_t(optin) >= s.wide_smem &&
        fits(s.wide_bm, s.wide_bn)) {
      return Dkdv::kWide;
    }
    if (fits(s.split_bm, s.split_bn)) return Dkdv::kSplit;
    throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, "flex_attention backward on CUDA: block mask of " +
                                                   std::to_string(f->q_block_size) + " x " +
                                                   std::to_string(f->kv_block_size) + " blocks: needs multiples of " +
                                                   std::to_string(s.split_bm) + " x " + std::to_string(s.split_bn));
  }

  std::shared_ptr<const KernelModule> module(const attnrt_attention_desc& d) const {
    const attnrt_flex_attention* f = sdk::flex_block(d);
    const ModuleShape shape{nullptr, d.dtype == ATTNRT_DTYPE_BF16, d.head_dim, d.cuda_arch};
    if (std::shared_ptr<const KernelModule> m = module_memo_.find(shape, f)) return m;
    ModuleKey key;
    if (f) key.mods = kernels::flex::Mods::from_block(*f);
    key.bf16 = shape.bf16;
    key.head_dim = d.head_dim;
    key.arch = d.cuda_arch;
    std::shared_ptr<const KernelModule> m = modules_.get(key);
    module_memo_.remember(shape, std::move(key.mods), m);
    return m;
  }

  // The block states ([batch, heads, q blocks, k blocks] bytes) follow what the direction needs.
  static size_t states_offset(const attnrt_attention_desc& d, bool backward) {
    return backward ? cuda::BackwardWorkspace::aligned(cuda::BackwardWorkspace::size(d, true)) : kTileCounterBytes;
  }

  // ATTNRT_FLEX_FORWARD / ATTNRT_FLEX_BACKWARD: "flash_attention_2" keeps every call of that
  // direction on flash_attention_2's kernels (comparisons), "hopper" makes a call that cannot take
  // the Hopper kernel fail with the reason (tests); unset, the Hopper kernel where it can run.
  static std::string forced(bool backward) {
    const char* v = std::getenv(backward ? "ATTNRT_FLEX_BACKWARD" : "ATTNRT_FLEX_FORWARD");
    return v ? v : "";
  }

  // Why the Hopper kernel of a direction cannot run a call ("" when it can).
  static std::string hopper_gap(const attnrt_attention_desc& d, bool backward) {
    const char* variable = backward ? "ATTNRT_FLEX_BACKWARD" : "ATTNRT_FLEX_FORWARD";
    if (forced(backward) == "flash_attention_2") return std::string(variable) + "=flash_attention_2";
    if (d.cuda_arch != 90) return "sm_" + std::to_string(d.cuda_arch) + " (its kernels are sm_90a's)";
    if (d.is_paged) return "a paged KV cache";
    if (backward && d.deterministic) return "a deterministic backward";
    if (!hopper_blob(backward, d.dtype == ATTNRT_DTYPE_BF16, d.head_dim, has_score_mod(d))) {
      const std::string dims = hopper_head_dims();
      return "no variant for this dtype and head_dim " + std::to_string(d.head_dim) + " in this build (" +
             (dims.empty() ? std::string("none built") : "head dims " + dims) + ")";
    }
    const attnrt_flex_attention* f = sdk::flex_block(d);
    const int rows = backward ? kHopperBackwardRows : kHopperRows;
    if (f && f->kv_num_blocks && (f->q_block_size % rows != 0 || f->kv_block_size % kHopperKeys != 0)) {
      return "block mask of " + std::to_string(f->q_block_size) + " x " + std::to_string(f->kv_block_size) +
             " blocks: the Hopper " + (backward ? "backward" : "forward") + " needs multiples of " +
             std::to_string(rows) + " x " + std::to_string(kHopperKeys);
    }
    if (backward && int64_t(ceil_div(d.seqlen_q, 64)) * (d.heads_q / std::max(d.heads_kv, 1)) > kHopperMaxSteps) {
      return "seqlen_q " + std::to_string(d.seqlen_q) + " x a GQA group of " +
             std::to_string(d.heads_q / std::max(d.heads_kv, 1)) + " over the Hopper backward's " +
             std::to_string(kHopperMaxSteps) + " query steps of 64 rows a key block";
    }
    if (!backward && d.seqlen_k > int64_t(kHopperMaxWalk) * kHopperKeys) {
      return "seqlen_k " + std::to_string(d.seqlen_k) + " over the Hopper forward's " +
             std::to_string(int64_t(kHopperMaxWalk) * kHopperKeys) + " keys";
    }
    return "";
  }
  // The Hopper kernels' tiles as hopper_forward.cu.in and hopper_backward.cu.in define them: each
  // forward warpgroup's 64 rows and each backward step's rows (up to 128) lie in one block of the
  // mask, each block of 128 keys in one of its blocks; the forward's walk length and the
  // backward's steps a CTA (fa3_backward.cuh's kMaxSparseSteps). The modules' shapes are checked
  // against them.
  static constexpr int kHopperRows = 64, kHopperBackwardRows = 128, kHopperKeys = 128, kHopperMaxWalk = 1024,
                       kHopperMaxSteps = 16384;

  // The call's Hopper module of a direction (the forward's of `rows` query rows a tile), or null
  // where it takes flash_attention_2's kernels.
  std::shared_ptr<const HopperModule> hopper_module(const attnrt_attention_desc& d, bool backward,
                                                    int rows = 128) const {
    if (const std::string gap = hopper_gap(d, backward); !gap.empty()) {
      if (forced(backward) == "hopper") {
        throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, std::string("flex_attention: ") +
                                                       (backward ? "ATTNRT_FLEX_BACKWARD" : "ATTNRT_FLEX_FORWARD") +
                                                       "=hopper, but " + gap);
      }
      return nullptr;
    }
    const HopperBlob* blob = hopper_blob(backward, d.dtype == ATTNRT_DTYPE_BF16, d.head_dim, has_score_mod(d), rows);
    if (blob == nullptr)
      throw sdk::Error(ATTNRT_ERROR_INTERNAL,
                       "flex_attention: no Hopper variant of " + std::to_string(rows) + " rows in this build");
    const attnrt_flex_attention* f = sdk::flex_block(d);
    const ModuleShape shape{blob, d.dtype == ATTNRT_DTYPE_BF16, d.head_dim, d.cuda_arch};
    if (std::shared_ptr<const HopperModule> m = hopper_memo_.find(shape, f)) return m;  // (its tiles checked)
    kernels::flex::Mods mods = f ? kernels::flex::Mods::from_block(*f) : kernels::flex::Mods{};
    std::shared_ptr<const HopperModule> m;
    try {
      m = hopper_.get(*blob, mods);
    } catch (const sdk::Error& e) {
      // Mods that do not compile fail the call shape either way; a link or load that fails (an
      // nvJitLink older than the build's LTO-IR, say) leaves flash_attention_2's kernels.
      // (The 192-row forward is optional: its failure leaves 128 rows even under =hopper.)
      if (e.status() == ATTNRT_ERROR_INVALID_ARGUMENT || (forced(backward) == "hopper" && rows == 128)) throw;
      return nullptr;
    }
    const bool fits =
        backward ? m->bn == kHopperKeys && kHopperBackwardRows % m->bm == 0
                 : m->bn == kHopperKeys && m->bm % kHopperRows == 0 && m->max_walk == kHopperMaxWalk && m->bm == rows;
    if (!fits) {
      throw sdk::Error(ATTNRT_ERROR_INTERNAL, "flex_attention: the Hopper kernel's tiles (" + std::to_string(m->bm) +
                                                  " x " + std::to_string(m->bn) + ") are not the plugin's");
    }
    hopper_memo_.remember(shape, std::move(mods), m);
    return m;
  }

  // q, k, v (and dout, in a backward) as TMA maps of boxes of `q_rows` queries and `k_rows` keys;
  // with `o_by_tma`, the forward's out, where it has one (CallLayout::out_map: *o_by_tma 1, else
  // 0), of boxes of 64 rows.
  struct Maps {
    CUtensorMap q, k, v, dout, out;
  };
  static Maps tensor_maps(const attnrt_attention_desc& d, const DLTensor* q, const DLTensor* k,
                          const cuda::AttentionParams& p, int q_rows, int k_rows, int32_t* o_by_tma = nullptr) {
    const cuda::hopper::CallLayout l = cuda::hopper::call_layout(d, q, k);
    Maps m;
    m.q = l.map("q", p.q, p, l.q_rows, p.heads_q, d.head_dim, q_rows);
    m.k = l.map("k", p.k, p, l.k_rows, p.heads_kv, d.head_dim, k_rows);
    m.v = l.map("v", p.v, p, l.k_rows, p.heads_kv, d.head_dim, k_rows);
    if (p.dout.data) m.dout = l.map("dout", p.dout, p, l.q_rows, p.heads_q, d.head_dim, q_rows);
    if (o_by_tma) *o_by_tma = l.out_map(p, d.head_dim, &m.out) ? 1 : 0;
    return m;
  }

  // flash_attention_3's forward (fa3_forward.cuh) under the flex policy: persistent CTAs, one
  // per SM, take tiles from the counter at the workspace's start (zeroed here), in bands of
  // (sequence, head) pairs whose K and V fit in 16 MiB of L2, as flash_attention_3 launches it.
  void hopper_forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e,
                      const HopperModule& m, const attnrt_flex::KernelParams& x) const {
    const char* what = "flex_attention forward (Hopper)";
    cuda::AttentionParams p = cuda::make_params(d, a, kRowAlignment);
    p.tile_counter = static_cast<int32_t*>(e.workspace);
    Maps maps = tensor_maps(d, a.q, a.k, p, m.bm, m.bn, &p.o_by_tma);
    const int64_t tiles = int64_t(ceil_div(p.seqlen_q, m.bm)) * p.heads_q * p.batch;
    if (tiles > INT32_MAX) throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, std::string(what) + ": over 2^31 tiles");
    const int ctas = static_cast<int>(std::min<int64_t>(tiles, sm_count(d, what)));
    int band = cuda::hopper::forward_band(p, d.head_dim, 2);
    // The block-state kernel zeroed the counter where there is a block mask (kernel_params).
    if (x.tile_state == nullptr) check_cuda(cudaMemsetAsync(p.tile_counter, 0, sizeof(int32_t), stream(e)), what);
    set_smem(m.kernel, m.smem, d, what);
    void* args[] = {&p, &maps.q, &maps.k, &maps.v, &maps.out, const_cast<attnrt_flex::KernelParams*>(&x), &band};
    // After the block-state kernel (or, the second of the choice's pair, after the first), a
    // dependent launch, which hides the launch between the two (the first forward does not
    // release the second early, so that one starts as the first ends).
    launch(m.kernel, dim3(ctas), m.threads, m.smem, args, e, what, x.tile_state != nullptr);
  }

  // flash_attention_3's dK/dV/dQ kernel (fa3_backward.cuh) under the flex policy, between
  // backward()'s D and its dq conversion: one CTA per 128 keys of a (kv head, sequence) pair, dK and
  // dV in registers, dQ added to the fp32 accumulator (bound in p) by bulk reductions.
  void hopper_dkdv(const attnrt_attention_desc& d, const attnrt_backward_args& a, const attnrt_exec& e,
                   const HopperModule& m, const attnrt_flex::KernelParams& x, cuda::AttentionParams& p) const {
    const char* what = "flex_attention backward (Hopper)";
    Maps maps = tensor_maps(d, a.q, a.k, p, m.bm, m.bn);
    int band = cuda::hopper::backward_band(p, d.head_dim, 2);
    const int64_t ctas = int64_t(ceil_div(p.seqlen_k, m.bn)) * p.heads_kv * p.batch;
    if (ctas > INT32_MAX) throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, std::string(what) + ": over 2^31 CTAs");
    set_smem(m.kernel, m.smem, d, what);
    void* args[] = {&p, &maps.q, &maps.k, &maps.v, &maps.dout, const_cast<attnrt_flex::KernelParams*>(&x), &band};
    launch(m.kernel, dim3(static_cast<unsigned>(ctas)), m.threads, m.smem, args, e, what);
  }

  static size_t states_bytes(const attnrt_attention_desc& d) {
    const attnrt_flex_attention* f = sdk::flex_block(d);
    if (f == nullptr || f->kv_num_blocks == nullptr) return 0;
    return size_t(f->kv_num_blocks->shape[0]) * f->kv_num_blocks->shape[1] * f->kv_num_blocks->shape[2] *
           ceil_div(d.seqlen_k, f->kv_block_size);
  }

  // What the mods read: the aux tensors (pointers, shapes, strides) and the scalars.
  static attnrt_flex::Context context(const attnrt_flex_attention& f) {
    attnrt_flex::Context ctx{};
    for (int32_t i = 0; i < f.num_aux; ++i) {
      ctx.aux[i] = cuda::detail::data_of(f.aux[i]);
      for (int k = 0; k < f.aux[i]->ndim; ++k) {
        ctx.shape[i][k] = f.aux[i]->shape[k];
        ctx.stride[i][k] = stride(f.aux[i], k);
      }
    }
    for (int32_t i = 0; i < f.num_scalars; ++i) ctx.scalars[i] = f.scalars[i];
    return ctx;
  }

  // The mods' context and, with a block mask, its lists as per-block states in the workspace at
  // `states_at` (written on the call's stream before the kernels that read them; the kernel that
  // writes them also zeroes `counter` where it is not NULL, and adds the forward's walks of both
  // tile heights to `walks`, cleared before, where it is not NULL).
  attnrt_flex::KernelParams kernel_params(const attnrt_attention_desc& d, const KernelModule& m, const attnrt_exec& e,
                                          size_t states_at, int32_t* counter,
                                          unsigned long long* walks = nullptr) const {
    attnrt_flex::KernelParams x{};
    x.forward_bn = m.tile.bn;
    const attnrt_flex_attention* f = sdk::flex_block(d);
    if (f == nullptr) return x;
    x.has_mask_mod = f->mask_mod && *f->mask_mod;
    x.ctx = context(*f);
    if (f->kv_num_blocks == nullptr) return x;
    int batch = static_cast<int>(f->kv_num_blocks->shape[0]), heads = static_cast<int>(f->kv_num_blocks->shape[1]);
    int q_blocks = static_cast<int>(f->kv_num_blocks->shape[2]), k_blocks = ceil_div(d.seqlen_k, f->kv_block_size);
    unsigned char* state = static_cast<unsigned char*>(e.workspace) + states_at;
    x.tile_state = state;
    x.state_batch = batch;
    x.state_heads = heads;
    x.q_blocks = q_blocks;
    x.k_blocks = k_blocks;
    x.q_block = f->q_block_size;
    x.kv_block = f->kv_block_size;
    attnrt_flex::List partial = flex_list(f->kv_num_blocks, f->kv_indices);
    attnrt_flex::List full = f->full_kv_num_blocks ? flex_list(f->full_kv_num_blocks, f->full_kv_indices) : partial;
    int has_full = f->full_kv_num_blocks != nullptr;
    int q_block = f->q_block_size, seqlen_q = static_cast<int>(d.seqlen_q);
    // The walks' cost counts the Hopper forward's steps of 128 keys (kHopperKeys divides kv blocks).
    int block_steps = std::max(1, f->kv_block_size / kHopperKeys);
    void* args[] = {&state,    &batch,   &heads, &q_blocks, &k_blocks, &partial,    &full,
                    &has_full, &counter, &walks, &q_block,  &seqlen_q, &block_steps};
    // A warp a row of the states, then with `walks` a warp a tile of each height (flex_policy.cuh).
    const int threads = kStateThreads;
    int64_t warps = int64_t(batch) * heads * q_blocks;
    if (walks) warps += int64_t(batch) * heads * (ceil_div(seqlen_q, 128) + ceil_div(seqlen_q, 192));
    // On sm_90, a programmatic dependent of the kernel before it (attnrt_flex_block_states waits
    // for that kernel first).
    launch(m.block_states, dim3(static_cast<unsigned>(ceil_div(warps * 32, int64_t(threads)))), threads, 0, args, e,
           "flex_attention block mask", d.cuda_arch >= 90);
    return x;
  }

  mutable ModuleCache modules_;
  mutable HopperCache hopper_;
  mutable ModuleMemo<KernelModule> module_memo_;  // the two caches' modules, found per call in place
  mutable ModuleMemo<HopperModule> hopper_memo_;
  mutable RowsChoices choices_;
  mutable std::mutex attributes_mutex_;
  mutable std::set<std::tuple<const void*, int, size_t>> smem_set_;  // (kernel, device, bytes) set
  mutable std::map<int, int> sm_counts_;                             // by device
};

}  // namespace
}  // namespace attnrt::plugins::flex_cuda

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::flex_cuda::FlexAttentionCuda)
