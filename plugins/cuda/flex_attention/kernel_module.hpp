// flex_attention's CUDA kernels for one call shape: the user's mods compiled by NVRTC together
// with flash_attention_2's forward and backward kernels under the flex score policy
// (flex_policy.cuh), for one dtype, head_dim and GPU architecture; kept in the disk cache as a cubin and loaded with
// the CUDA runtime's library API (context-independent, so one load serves every device of the
// architecture).
#pragma once

#include <attnrt_kernels/flex/disk_cache.hpp>
#include <attnrt_kernels/flex/mods.hpp>

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace attnrt::plugins::flex_cuda {

// flash_attention_2's forward tile for a head_dim (fa2_launch.cuh, Config): rows per CTA, keys
// per step, m16 tiles per warp.
struct ForwardTile {
  int bm, bn, mt;
  int threads() const { return bm / (16 * mt) * 32; }
  size_t smem_bytes(int head_dim) const { return size_t(bm + 2 * bn) * (head_dim + 8) * 2; }
};
ForwardTile forward_tile(int head_dim);

// The backward's launch shapes, read from the module (the kernels' own constants): the dK/dV
// kernel with dQ fused (sm_90's shared memory), and the split pair (dV, then dK and dQ) that
// other GPUs run.
struct BackwardShapes {
  int wide_threads = 0, wide_bn = 0, wide_bm = 0;
  size_t wide_smem = 0;
  int split_threads = 0, split_bn = 0, split_bm = 0;
  size_t split_dv_smem = 0, split_dk_smem = 0;
};

struct KernelModule {
  cudaLibrary_t library = nullptr;
  cudaKernel_t forward = nullptr;       // fa2::forward_kernel<T, HD, BM, BN, MT, FlexScores>
  cudaKernel_t block_states = nullptr;  // attnrt_flex_block_states
  // create_block_mask's three kernels (flex_block_mask.cuh): a mask_only module's only ones
  cudaKernel_t mask_classify = nullptr, mask_columns = nullptr, mask_rows = nullptr;
  // Backward (flash_attention_2's, FlexScores): D, the dK/dV kernels (wide: NULL below sm_90),
  // dq = softmax_scale * dq_accum.
  cudaKernel_t softmax_d = nullptr, dkdv_wide = nullptr, dkdv_split_dv = nullptr, dkdv_split_dk = nullptr,
               dq_convert = nullptr;
  cudaKernel_t dq_convert_swizzled = nullptr;  // dq from the Hopper backward's accumulator (hopper_module.hpp)
  BackwardShapes backward;
  ForwardTile tile{};
  bool cache_hit = false;  // the cubin came from the disk cache
  double compile_seconds = 0;
  ~KernelModule();
};

struct ModuleKey {
  kernels::flex::Mods mods;
  bool bf16 = true;
  int head_dim = 0, arch = 0;
  // create_block_mask's module: mask_mod and flex_block_mask.cuh's kernels alone (no attention
  // kernels, so a fraction of the compile time; dtype and head_dim are not read).
  bool mask_only = false;
};

class ModuleCache {
 public:
  explicit ModuleCache(std::string plugin_version) : version_(std::move(plugin_version)) {}
  // The loaded module (from memory, the disk cache, or NVRTC). Throws Error: INVALID_ARGUMENT
  // with NVRTC's log when the mods do not compile, UNSUPPORTED when NVRTC or the CUDA headers
  // are missing, DEVICE when the cubin does not load.
  std::shared_ptr<const KernelModule> get(const ModuleKey& key);

 private:
  std::string version_;
  std::optional<kernels::flex::DiskCache> disk_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const KernelModule>> loaded_;  // by the short key
};

}  // namespace attnrt::plugins::flex_cuda
