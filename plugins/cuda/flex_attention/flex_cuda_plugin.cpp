// flex_attention on CUDA (ABI 1.3's flex block, plugin_abi.h attnrt_flex_attention): PyTorch
// FlexAttention's score_mod and mask_mod compiled by NVRTC into flash_attention_2's forward
// mainloop under the flex score policy (flex_policy.cuh), with the block mask's skipped tiles
// never visited and its full tiles spared mask_mod. Kernels are compiled when a call shape
// (mods, dtype, head_dim, GPU arch) is first prepared, in supports(), and kept in the disk cache.
// Forward only: backward is refused with its reason (the CPU flex_attention has one).
#include "kernel_module.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_cuda/cuda_check.hpp>
#include <attnrt_cuda/make_params.hpp>
#include <attnrt_kernels/flex/prelude_host.hpp>

#include "flex_params.h"

#include <string>

namespace attnrt::plugins::flex_cuda {
namespace {

using cuda::check_cuda;

int64_t stride(const DLTensor* t, int d) { return cuda::detail::stride_of(*t, d); }
int ceil_div(int64_t a, int64_t b) { return static_cast<int>((a + b - 1) / b); }

// A block-mask list as the tile-state kernel reads it (flex_policy.cuh, AttnrtFlexList).
struct FlexList {
  const int* num;
  const int* idx;
  long long num_stride[3], idx_stride[4];
  int width;
};

FlexList flex_list(const DLTensor* num, const DLTensor* idx) {
  FlexList l{};
  l.num = static_cast<const int*>(cuda::detail::data_of(num));
  l.idx = static_cast<const int*>(cuda::detail::data_of(idx));
  for (int d = 0; d < 3; ++d) l.num_stride[d] = num->shape[d] == 1 ? 0 : stride(num, d);
  for (int d = 0; d < 4; ++d) l.idx_stride[d] = (d < 2 && idx->shape[d] == 1) ? 0 : stride(idx, d);
  l.width = static_cast<int>(idx->shape[3]);
  return l;
}

class FlexAttentionCuda {
 public:
  static constexpr const char* kName = "flex_attention";
  static constexpr const char* kVersion = "0.1.0";
  static constexpr const char* kDescription =
      "PyTorch FlexAttention's score_mod / mask_mod / block mask compiled by NVRTC into flash_attention_2's forward "
      "(sm_80+); forward only";
  static constexpr uint32_t kExtensions[] = {ATTNRT_EXTENSION_TYPE_FLEX_ATTENTION};
  static constexpr attnrt_capabilities kCapabilities =
      sdk::capabilities({.devices = ATTNRT_DEVICE_BIT_CUDA,
                         .dtypes = ATTNRT_DTYPE_BIT_FP16 | ATTNRT_DTYPE_BIT_BF16,
                         .features = ATTNRT_FEATURE_GQA | ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SLIDING_WINDOW |
                                     ATTNRT_FEATURE_VARLEN | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_FLEX_ATTENTION,
                         .min_head_dim = 64,
                         .max_head_dim = 128,
                         .min_cuda_arch = 80});

  FlexAttentionCuda() : modules_(kVersion) {}

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
    } catch (const sdk::Error& e) {
      return e.what();
    }
    return "";
  }

  size_t workspace_size(const attnrt_attention_desc& d, bool /*backward*/, int /*num_threads*/) const {
    const attnrt_flex_attention* f = sdk::flex_block(d);
    if (f == nullptr || f->kv_num_blocks == nullptr) return 0;
    const ForwardTile tile = forward_tile(d.head_dim);
    return size_t(f->kv_num_blocks->shape[0]) * f->kv_num_blocks->shape[1] * ceil_div(d.seqlen_q, tile.bm) *
           ceil_div(d.seqlen_k, tile.bn);
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    cuda::use_device(d);
    const std::shared_ptr<const KernelModule> m = module(d);
    const cuda::AttentionParams p = cuda::make_params(d, a, 16);
    if (p.seqlen_q == 0 || p.batch == 0) return;
    attnrt_flex::KernelParams x{};
    x.has_mask_mod = 0;
    x.tile_rows = m->tile.bm;
    const cudaStream_t stream = static_cast<cudaStream_t>(e.stream);
    if (const attnrt_flex_attention* f = sdk::flex_block(d)) {
      x.has_mask_mod = f->mask_mod && *f->mask_mod;
      for (int32_t i = 0; i < f->num_aux; ++i) {
        x.ctx.aux[i] = cuda::detail::data_of(f->aux[i]);
        for (int k = 0; k < f->aux[i]->ndim; ++k) {
          x.ctx.shape[i][k] = f->aux[i]->shape[k];
          x.ctx.stride[i][k] = stride(f->aux[i], k);
        }
      }
      for (int32_t i = 0; i < f->num_scalars; ++i) x.ctx.scalars[i] = f->scalars[i];
      if (f->kv_num_blocks) tile_states(d, *f, *m, e, x);
    }
    check_cuda(
        cudaFuncSetAttribute(reinterpret_cast<const void*>(m->forward), cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(m->tile.smem_bytes(d.head_dim))),
        "flex_attention forward: shared memory");
    const dim3 grid(ceil_div(p.seqlen_q, m->tile.bm), p.heads_q, p.batch);
    void* args[] = {const_cast<cuda::AttentionParams*>(&p), &x};
    check_cuda(cudaLaunchKernel(reinterpret_cast<const void*>(m->forward), grid, dim3(m->tile.threads()), args,
                                m->tile.smem_bytes(d.head_dim), stream),
               "flex_attention forward");
  }

  void backward(const attnrt_attention_desc&, const attnrt_backward_args&, const attnrt_exec&) {
    throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED,
                     "flex_attention on CUDA has no backward yet (the CPU flex_attention has one)");
  }

 private:
  std::shared_ptr<const KernelModule> module(const attnrt_attention_desc& d) const {
    ModuleKey key;
    if (const attnrt_flex_attention* f = sdk::flex_block(d)) key.mods = kernels::flex::Mods::from_block(*f);
    key.bf16 = d.dtype == ATTNRT_DTYPE_BF16;
    key.head_dim = d.head_dim;
    key.arch = d.cuda_arch;
    return modules_.get(key);
  }

  // The block mask's lists as per-tile states in the workspace, on the call's stream.
  void tile_states(const attnrt_attention_desc& d, const attnrt_flex_attention& f, const KernelModule& m,
                   const attnrt_exec& e, attnrt_flex::KernelParams& x) const {
    sdk::require_workspace(e, workspace_size(d, false, 0), 0);
    const int batch = static_cast<int>(f.kv_num_blocks->shape[0]), heads = static_cast<int>(f.kv_num_blocks->shape[1]);
    const int q_blocks = static_cast<int>(f.kv_num_blocks->shape[2]);
    x.state_batch = batch;
    x.state_heads = heads;
    x.q_tiles = ceil_div(d.seqlen_q, m.tile.bm);
    x.k_tiles = ceil_div(d.seqlen_k, m.tile.bn);
    x.tile_state = static_cast<const unsigned char*>(e.workspace);
    unsigned char* state = static_cast<unsigned char*>(e.workspace);
    int q_ratio = f.q_block_size / m.tile.bm, k_ratio = f.kv_block_size / m.tile.bn;
    FlexList partial = flex_list(f.kv_num_blocks, f.kv_indices);
    FlexList full = f.full_kv_num_blocks ? flex_list(f.full_kv_num_blocks, f.full_kv_indices) : partial;
    int has_full = f.full_kv_num_blocks != nullptr;
    int q_tiles = x.q_tiles, k_tiles = x.k_tiles;
    void* args[] = {&state,
                    const_cast<int*>(&batch),
                    const_cast<int*>(&heads),
                    const_cast<int*>(&q_blocks),
                    &q_ratio,
                    &k_ratio,
                    &q_tiles,
                    &k_tiles,
                    &partial,
                    &full,
                    &has_full};
    const int threads = 128, rows = batch * heads * q_blocks;
    check_cuda(cudaLaunchKernel(reinterpret_cast<const void*>(m.tile_states), dim3(ceil_div(rows, threads)),
                                dim3(threads), args, 0, static_cast<cudaStream_t>(e.stream)),
               "flex_attention block mask");
  }

  mutable ModuleCache modules_;
};

}  // namespace
}  // namespace attnrt::plugins::flex_cuda

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::flex_cuda::FlexAttentionCuda)
