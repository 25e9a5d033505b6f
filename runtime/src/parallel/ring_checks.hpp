// What the ring checks before it sends anything: the descriptor's features, the shards' shapes,
// and that the backend accepts every block descriptor of every rank's plan.
#pragma once

#include <attnrt/plugin_abi.h>
#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/parallel/ring_schedule.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace attnrt::cp {

// "" or why a ring cannot compute desc at all (paged, sinks, ALiBi, dropout, extensions; varlen
// with a window or with seqlen_q != seqlen_k).
std::string feature_refusal(const attnrt_attention_desc& desc);

// "" or the backend's reason for refusing one of the block descriptors of any rank's plan.
std::string backend_refusal(const Backend& backend, const attnrt_attention_desc& desc, const SequenceSplit& split,
                            bool backward);

// Throws attnrt::Error naming `name` unless t is a tensor of `shape`, `dtype` on `device` with a
// contiguous last dimension. `what` says where the shape comes from ("rank 1's shard of ...").
void check_shard(const char* name, const DLTensor* t, const std::vector<int64_t>& shape, DLDataType dtype,
                 DLDevice device, const std::string& what);

DLDataType dl_dtype(attnrt_dtype dtype);
inline DLDataType dl_f32() { return {kDLFloat, 32, 1}; }
inline size_t dtype_bytes(attnrt_dtype dtype) { return dtype == ATTNRT_DTYPE_FP32 ? 4 : 2; }
// Where v starts in a K/V buffer: k's bytes rounded up to 256, the alignment BlockOps::allocate
// gives k, so vectorised kernels may load v as they load k.
inline size_t v_offset(size_t k_bytes) { return (k_bytes + 255) / 256 * 256; }

}  // namespace attnrt::cp
