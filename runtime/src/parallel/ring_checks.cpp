#include "ring_checks.hpp"

#include <attnrt/runtime/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>
#include <tuple>

namespace attnrt::cp {

std::string feature_refusal(const attnrt_attention_desc& d) {
  if (d.is_paged) return "a paged KV cache is not supported by context parallelism (it is for decoding)";
  if (d.has_sinks)
    return "sinks are not supported by context parallelism yet (the sink term must enter one block only)";
  if (d.has_alibi) return "ALiBi is not supported by context parallelism yet (the bias needs global positions)";
  if (d.dropout_p > 0.0f)
    return "dropout is not supported by context parallelism (its mask is indexed by block positions)";
  if (ATTNRT_HAS_FIELD(&d, attnrt_attention_desc, extensions) && d.extensions) {
    return "extension blocks (flex_attention) are not supported by context parallelism";
  }
  return varlen_refusal(d);  // varlen itself is supported: packed self-attention without a window
}

std::string backend_refusal(const Backend& backend, const attnrt_attention_desc& desc, const SequenceSplit& split,
                            bool backward) {
  if (backward && !backend.has_backward()) return "backend " + backend.name() + " has no backward";
  // The block descriptors differ only in these fields: ask once per distinct combination.
  std::set<std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t>> asked;
  for (int r = 0; r < split.world_size; ++r) {
    const RingPlan plan = desc.is_varlen ? make_varlen_ring_plan(desc, split.layout, split.world_size, r)
                                         : make_ring_plan(desc, split, r);
    for (const RingStep& step : plan.steps) {
      for (const BlockCall& c : step.calls) {
        const auto key =
            std::make_tuple(c.desc.seqlen_q, c.desc.seqlen_k, c.desc.causal, c.desc.window_left, c.desc.window_right);
        if (!asked.insert(key).second) continue;
        std::string why = backend.unsupported_reason(c.desc);
        if (!why.empty()) {
          return fmt::format(
              "backend {} refuses the block of query chunk {} and key chunk {} ({}seqlen_q {}, seqlen_k {}, causal "
              "{}, window ({}, {})): {}",
              backend.name(), c.q_chunk, c.k_chunk, c.desc.is_varlen ? "varlen, max " : "", c.desc.seqlen_q,
              c.desc.seqlen_k, c.desc.causal, c.desc.window_left, c.desc.window_right, why);
        }
      }
    }
  }
  return "";
}

void check_shard(const char* name, const DLTensor* t, const std::vector<int64_t>& shape, DLDataType dtype,
                 DLDevice device, const std::string& what) {
  if (!t) throw Error(fmt::format("context parallel: {} is missing ({} {})", name, what, fmt::join(shape, ", ")));
  std::vector<int64_t> got(t->shape, t->shape + t->ndim);
  if (got != shape) {
    throw Error(fmt::format("context parallel: {} must be {} [{}], got [{}]", name, what, fmt::join(shape, ", "),
                            fmt::join(got, ", ")));
  }
  if (t->dtype.code != dtype.code || t->dtype.bits != dtype.bits || t->dtype.lanes != dtype.lanes) {
    throw Error(fmt::format("context parallel: {} has dtype code {} bits {}, expected code {} bits {}", name,
                            t->dtype.code, t->dtype.bits, dtype.code, dtype.bits));
  }
  if (t->device.device_type != device.device_type || t->device.device_id != device.device_id) {
    throw Error(fmt::format("context parallel: {} is on device ({}, {}), desc.device is ({}, {})", name,
                            static_cast<int>(t->device.device_type), t->device.device_id,
                            static_cast<int>(device.device_type), device.device_id));
  }
  int64_t numel = 1;
  for (int64_t n : got) numel *= n;
  if (!t->data && numel != 0) throw Error(fmt::format("context parallel: {} has no data", name));
  if (t->strides && t->ndim > 0 && t->strides[t->ndim - 1] != 1 && got.back() > 1) {
    throw Error(fmt::format("context parallel: {}'s last dimension must be contiguous (stride 1), got stride {}", name,
                            t->strides[t->ndim - 1]));
  }
}

DLDataType dl_dtype(attnrt_dtype dtype) {
  switch (dtype) {
    case ATTNRT_DTYPE_FP32: return {kDLFloat, 32, 1};
    case ATTNRT_DTYPE_FP16: return {kDLFloat, 16, 1};
    case ATTNRT_DTYPE_BF16: return {kDLBfloat, 16, 1};
  }
  throw Error(fmt::format("context parallel: desc.dtype {} is not fp32, fp16 or bf16", static_cast<int>(dtype)));
}

}  // namespace attnrt::cp
