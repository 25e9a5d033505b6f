// The paged_attention plugin: attention of queries over a paged KV cache on CUDA (sm_80 and newer;
// built for sm_80 and sm_90a) in vLLM's PagedAttention layout (plugin_abi.h: block_table,
// page_size, seqused_k): decode (seqlen_q 1), multi-token / speculative decode (seqlen_q 2-16)
// and chunked prefill (padded queries, or ABI 1.2's varlen queries by cu_seqlens_q, over their
// cached prefix, causal aligned bottom-right). fp16 and bf16; head_dim 64/128/256 (the build's
// list); GQA/MQA with the query heads of one KV head in one thread block, so each page is read
// once per KV head; sliding window, softcap, gpt-oss sinks, LSE.
//
// Split-KV (FlashDecoding; FlashAttention-2's num_splits heuristic, retuned): when (sequence, KV head,
// row block) blocks alone would leave SMs idle, every sequence's keys are cut into num_splits
// shares of whole key tiles (kKeys, paged_launch.hpp); the partial outputs and LSEs go to the
// workspace (workspace_size answers for the split count the call will use) and a combine kernel
// merges them. The count is chosen from batch, heads, query rows, the longest sequence and the
// device's SMs and resident blocks. Where it comes out even and head_dim is at most 128, each
// block takes two splits' keys as two groups of warps and merges them itself (paged_attention.cuh),
// so half as many partial outputs are written and merged, none at 16 x 8k decode.
// ATTNRT_PAGED_SPLITS=N (1: never split) and ATTNRT_PAGED_GROUPS=1|2, read when the plugin is
// created, override the split count (the partial outputs) and the groups a block (2 where the
// head_dim allows it).
//
// The KV-cache append (ABI 1.2's append_kv; vLLM's reshape_and_cache) writes new tokens into
// their pages from an int64 slot mapping, negative slots skipped.
//
// Refused with a reason: contiguous (non-paged) k/v, fp32, ALiBi, dropout, head_dim_v !=
// head_dim, other head dims, backward, rows that do not start on 16-byte boundaries.
#include "paged_launch.hpp"

#include <attnrt/plugin.hpp>
#include <attnrt/validate.hpp>
#include <attnrt_cuda/cuda_check.hpp>
#include <attnrt_cuda/head_dims.hpp>
#include <attnrt_cuda/make_params.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace attnrt::cuda {
class StandardScores;  // score_policy.cuh, compiled into the kernel libraries
class SinkScores;      // sink_policy.cuh
}  // namespace attnrt::cuda

namespace attnrt::plugins::paged {
namespace {

using HeadDims = cuda::HeadDims<ATTNRT_PAGED_HEAD_DIMS>;
using cuda::check_cuda;
using cuda::use_device;
using cuda::paged::kKeys;
using cuda::paged::kMaxSplits;
using cuda::paged::kRows;

constexpr size_t kAlign = 256;
constexpr size_t kRowAlignment = 16;  // cp.async and the query loads move 16 bytes

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

int64_t row_blocks(const attnrt_attention_desc& d) {
  return (int64_t(d.seqlen_q) * (d.heads_q / d.heads_kv) + kRows - 1) / kRows;
}

// The split count of a decode grid, after FlashAttention-2's num_splits_heuristic (wave
// efficiency: blocks / slots over the rounds of resident blocks they take), retuned for a
// memory-bound kernel from H100 measurements (bench/results/paged-decode-2026-11-23/splits.csv):
//   - a last round that is only partly full leaves bandwidth idle while it runs: 64 x 2k at
//     GQA 8 (512 blocks on 396 slots, 1.3 rounds) streamed 2.26 TB/s unsplit and 2.51 split 4
//     ways, where FlashAttention-2's rule (unsplit from 80% of one round) kept it unsplit;
//   - each split costs a partial row per query row (written, then read by the combine kernel)
//     and the combine: 256 x 1k (5.2 rounds) streamed 2.76 TB/s unsplit, 2.59 split 4 ways.
// So: unsplit when the grid fills two rounds or its rounds are 90% full; else the smallest
// count whose rounds are at least 96% full (the best one if none is), never more than the
// tiles of the longest sequence allow (at least 2 tiles a split), kMaxSplits or one slot each.
// (96%, not 90%: with swizzled K/V rows a 1 x 64k step at GQA 4-8 took 0.1130-0.1151 ms in 32
// splits of 32 tiles (forced as 33), and 0.1140-0.1169 ms in the 30 that 90% chose, pages 16
// and 64; bench/results/paged-decode-2026-11-24/experiments/call12/. 16 x 8k keeps its 2, now
// as one block of two groups: plan().)
int heuristic_splits(int64_t blocks, int sms, int blocks_per_sm, int64_t tiles) {
  constexpr double kUnsplit = 0.9, kFull = 0.96;
  const double slots = double(sms) * std::max(blocks_per_sm, 1);
  auto efficiency = [&](int s) {
    const double rounds = double(blocks) * s / slots;
    return rounds / std::ceil(rounds);
  };
  if (double(blocks) >= 2 * slots || efficiency(1) >= kUnsplit) return 1;
  const int max_splits = int(std::min<int64_t>({kMaxSplits, std::max<int64_t>(tiles / 2, 1), int64_t(slots)}));
  int best = 1;
  for (int s = 1; s <= max_splits; ++s) {
    if (efficiency(s) >= kFull) return s;
    if (efficiency(s) > efficiency(best)) best = s;
  }
  return best;
}

class PagedAttentionPlugin {
 public:
  static constexpr const char* kName = "paged_attention";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr const char* kDescription =
      "decode and chunked prefill over a paged KV cache (PagedAttention layout) on CUDA, split-KV, fp16/bf16";

  static constexpr attnrt_capabilities kCapabilities = sdk::capabilities(
      {.devices = ATTNRT_DEVICE_BIT_CUDA,
       .dtypes = ATTNRT_DTYPE_BIT_FP16 | ATTNRT_DTYPE_BIT_BF16,
       .features = ATTNRT_FEATURE_GQA | ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SLIDING_WINDOW | ATTNRT_FEATURE_SOFTCAP |
                   ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_VARLEN | ATTNRT_FEATURE_PAGED_KV |
                   ATTNRT_FEATURE_PAGED_VARLEN_Q | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_APPEND_KV,
       .min_head_dim = HeadDims::kMin,
       .max_head_dim = HeadDims::kMax,
       .min_cuda_arch = 80});

  PagedAttentionPlugin()
      : forced_splits_(env_int("ATTNRT_PAGED_SPLITS", kMaxSplits)), forced_groups_(env_int("ATTNRT_PAGED_GROUPS", 2)) {}

  std::string supports(const attnrt_attention_desc& d) const {
    if (!d.is_paged) {
      return "paged_attention needs a paged KV cache (is_paged 0: contiguous k/v are flash_attention_2's)";
    }
    if (std::string gap = HeadDims::gap(d.head_dim); !gap.empty()) return gap;
    if (row_blocks(d) > 65535) {
      return "seqlen_q " + std::to_string(d.seqlen_q) + " x " + std::to_string(d.heads_q / d.heads_kv) +
             " query heads per KV head exceeds the grid's 65535 blocks of " + std::to_string(kRows) + " rows";
    }
    if (int64_t(d.batch) * d.heads_kv > (int64_t(1) << 31) - 1) return "batch * heads_kv exceeds 2^31 - 1";
    return "";
  }

  size_t workspace_size(const attnrt_attention_desc& d, bool /*backward*/, int /*num_threads*/) const {
    if (!d.is_paged || !HeadDims::contains(d.head_dim)) return 0;
    return workspace_for(d, plan(d).splits);
  }

  void forward(const attnrt_attention_desc& d, const attnrt_forward_args& a, const attnrt_exec& e) {
    use_device(d);
    cuda::paged::PagedParams p;
    p.attn = cuda::make_params(d, a, kRowAlignment);
    p.k = cache(p.attn.k, *a.k);
    p.v = cache(p.attn.v, *a.v);
    p.block_table = static_cast<const int32_t*>(cuda::detail::data_of(a.block_table));
    p.table_stride = cuda::detail::stride_of(*a.block_table, 0);
    p.page_size = d.page_size;
    p.page_shift = (d.page_size & (d.page_size - 1)) == 0 ? std::countr_zero(uint32_t(d.page_size)) : -1;
    p.group = d.heads_q / d.heads_kv;
    p.row_blocks = int32_t(row_blocks(d));
    const Plan plan = this->plan(d);
    p.num_splits = plan.splits;
    p.groups = plan.groups;
    if (p.attn.total_q == 0) return;
    const bool bf16 = d.dtype == ATTNRT_DTYPE_BF16;
    cudaStream_t stream = static_cast<cudaStream_t>(e.stream);
    if (p.num_splits > 1) {
      sdk::require_workspace(e, workspace_for(d, p.num_splits), 0);
      const size_t rows = size_t(d.heads_q) * size_t(p.attn.total_q);
      auto* ws = static_cast<unsigned char*>(e.workspace);
      p.partial_lse = reinterpret_cast<float*>(ws);
      p.partial_out = reinterpret_cast<float*>(ws + aligned(size_t(p.num_splits) * rows * sizeof(float)));
    }
    HeadDims::dispatch(d.head_dim, [&](auto hd) {
      constexpr int kHd = decltype(hd)::value;
      check_cuda(d.has_sinks ? cuda::paged::run_attention<cuda::SinkScores, kHd>(p, bf16, stream)
                             : cuda::paged::run_attention<cuda::StandardScores, kHd>(p, bf16, stream),
                 "paged_attention forward");
    });
    if (p.num_splits > 1) {
      check_cuda(cuda::paged::run_combine(p, bf16, d.cuda_arch >= 90, stream), "paged_attention split-KV combine");
    }
  }

  void append_kv(const attnrt_attention_desc& d, const attnrt_append_kv_args& a, const attnrt_exec& e) {
    use_device(d);
    cuda::paged::AppendParams p;
    const cuda::TensorRef kn = cuda::detail::ref("k_new", a.k_new, 2), vn = cuda::detail::ref("v_new", a.v_new, 2);
    p.k_new = kn.data;
    p.v_new = vn.data;
    p.k_new_row_stride = kn.row_stride;
    p.k_new_head_stride = kn.head_stride;
    p.v_new_row_stride = vn.row_stride;
    p.v_new_head_stride = vn.head_stride;
    cuda::detail::require_compact("slot_mapping", a.slot_mapping);
    p.slot_mapping = static_cast<const int64_t*>(cuda::detail::data_of(a.slot_mapping));
    p.k_cache = cache(cuda::detail::ref("k_cache", a.k_cache, 2), *a.k_cache);
    p.v_cache = cache(cuda::detail::ref("v_cache", a.v_cache, 2), *a.v_cache);
    p.num_tokens = a.k_new->shape[0];
    p.num_pages = a.k_cache->shape[0];
    p.page_size = d.page_size;
    p.heads_kv = d.heads_kv;
    p.head_dim = d.head_dim;
    p.head_dim_v = d.head_dim_v;
    if (p.num_tokens > (int64_t(1) << 31) - 1) {
      throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, "append_kv: more than 2^31 - 1 tokens in one call");
    }
    check_cuda(cuda::paged::run_append(p, d.dtype == ATTNRT_DTYPE_BF16, static_cast<cudaStream_t>(e.stream)),
               "paged_attention append_kv");
  }

 private:
  // k or v as pages: make_params' batch stride is the page stride, its row stride the token's.
  static cuda::paged::PagedCache cache(const cuda::TensorRef& r, const DLTensor& /*t*/) {
    return {r.data, r.batch_stride, r.row_stride, r.head_stride};
  }

  static size_t workspace_for(const attnrt_attention_desc& d, int num_splits) {
    if (num_splits <= 1) return 0;
    // batch * max seqlen_q bounds the packed queries of a varlen call.
    const size_t rows = size_t(d.heads_q) * size_t(d.batch) * size_t(d.seqlen_q);
    return aligned(size_t(num_splits) * rows * sizeof(float)) +
           aligned(size_t(num_splits) * rows * size_t(d.head_dim_v) * sizeof(float));
  }

  // An override read from the environment: unset, or an integer in [1, most].
  static int env_int(const char* name, int most) {
    const char* env = std::getenv(name);
    if (env == nullptr || *env == '\0') return 0;
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (*end != '\0' || n < 1 || n > most) {
      throw sdk::Error(ATTNRT_ERROR_INVALID_ARGUMENT,
                       std::string(name) + "=" + env + ": expected an integer in [1, " + std::to_string(most) + "]");
    }
    return int(n);
  }

  // The split count and groups a block of a call: a pure function of the descriptor and the
  // device, so workspace_size and forward agree. The heuristic counts key streams (one per block
  // of one group, as many as a split); an even count goes to blocks of two groups where they
  // keep as many streams resident per SM.
  struct Plan {
    int splits = 1, groups = 1;
  };
  Plan plan(const attnrt_attention_desc& d) const {
    const int64_t tiles = (int64_t(d.seqlen_k) + kKeys - 1) / kKeys;
    const Occupancy occ = occupancy(d);
    const bool two = occ.two_group_blocks > 0 && 2 * occ.two_group_blocks >= occ.blocks_per_sm;
    Plan plan;
    if (forced_groups_ == 2 && occ.two_group_blocks > 0) plan.groups = 2;
    if (forced_splits_ > 0) {
      plan.splits = int(std::min<int64_t>(forced_splits_, std::max<int64_t>(tiles, 1)));
      return plan;
    }
    const int64_t blocks = int64_t(d.batch) * d.heads_kv * row_blocks(d);
    const int streams = heuristic_splits(blocks, occ.sms, occ.blocks_per_sm, tiles);
    if (forced_groups_ == 0 && two && streams % 2 == 0) plan.groups = 2;
    plan.splits = std::max(streams / plan.groups, 1);
    return plan;
  }

  // The device's SMs and the kernel's resident blocks per SM, asked once per (device, kernel)
  // and kept: workspace_size and forward both need them on every call.
  struct Occupancy {
    int sms = 1, blocks_per_sm = 1, two_group_blocks = 0;
  };
  Occupancy occupancy(const attnrt_attention_desc& d) const {
    const bool bf16 = d.dtype == ATTNRT_DTYPE_BF16;
    const auto key = std::make_tuple(d.device.device_id, d.head_dim, bf16, d.has_sinks != 0);
    {
      std::lock_guard<std::mutex> lock(occupancy_mutex_);
      if (auto it = occupancy_.find(key); it != occupancy_.end()) return it->second;
    }
    Occupancy occ;
    use_device(d);  // the occupancy query is the current device's
    check_cuda(cudaDeviceGetAttribute(&occ.sms, cudaDevAttrMultiProcessorCount, d.device.device_id),
               "cudaDeviceGetAttribute(multiprocessor count)");
    HeadDims::dispatch(d.head_dim, [&](auto hd) {
      constexpr int kHd = decltype(hd)::value;
      for (int groups : {1, 2}) {
        const int blocks = d.has_sinks ? cuda::paged::blocks_per_sm<cuda::SinkScores, kHd>(bf16, groups)
                                       : cuda::paged::blocks_per_sm<cuda::StandardScores, kHd>(bf16, groups);
        (groups == 1 ? occ.blocks_per_sm : occ.two_group_blocks) = blocks;
      }
    });
    std::lock_guard<std::mutex> lock(occupancy_mutex_);
    occupancy_.emplace(key, occ);
    return occ;
  }

  int forced_splits_ = 0, forced_groups_ = 0;  // 0: the heuristic's
  mutable std::mutex occupancy_mutex_;
  mutable std::map<std::tuple<int32_t, int32_t, bool, bool>, Occupancy> occupancy_;
};

}  // namespace
}  // namespace attnrt::plugins::paged

ATTNRT_DEFINE_PLUGIN(attnrt::plugins::paged::PagedAttentionPlugin)
