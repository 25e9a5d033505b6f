// What the reference plugins compute (eager on the CPU and on CUDA, the CPU sdpa): every field
// of the descriptor in every dtype, except dropout (no RNG convention shared with the GPU
// kernels yet). They are the baselines every other kernel is checked against, so they declare
// one feature set, written once.
#pragma once

#include <attnrt/plugin_abi.h>

#include <cstdint>

namespace attnrt::kernels {

inline constexpr uint32_t kReferenceDtypes = ATTNRT_DTYPE_BIT_FP32 | ATTNRT_DTYPE_BIT_FP16 | ATTNRT_DTYPE_BIT_BF16;

inline constexpr uint64_t kReferenceFeatures =
    ATTNRT_FEATURE_GQA | ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SLIDING_WINDOW | ATTNRT_FEATURE_SOFTCAP |
    ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_ALIBI | ATTNRT_FEATURE_VARLEN | ATTNRT_FEATURE_PAGED_KV | ATTNRT_FEATURE_LSE |
    ATTNRT_FEATURE_BACKWARD | ATTNRT_FEATURE_DETERMINISTIC | ATTNRT_FEATURE_HEAD_DIM_V | ATTNRT_FEATURE_PAGED_VARLEN_Q;

// The CPU reference plugins (eager, sdpa) also write paged caches (ABI 1.2's append_kv).
inline constexpr uint64_t kReferenceCpuFeatures = kReferenceFeatures | ATTNRT_FEATURE_APPEND_KV;

}  // namespace attnrt::kernels
