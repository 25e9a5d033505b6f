// RingAttention's setup and queries (context_parallel.hpp); the ring itself is in
// ring_forward.cpp and ring_backward.cpp.
#include "ring_setup.hpp"

#include <attnrt/runtime/error.hpp>
#include <attnrt/validate.hpp>

#include <fmt/format.h>

namespace attnrt::cp {

std::string RingSetup::what() const {
  if (varlen) {
    return fmt::format("rank {}'s shard (a packed batch of {} sequences, {} tokens over {} ranks, {} layout)", rank,
                       batch, shard_q * world_size, world_size, layout_name(split.layout));
  }
  return fmt::format("rank {}'s shard (global seqlen_q {}, seqlen_k {} over {} ranks, {} layout)", rank, split.seqlen_q,
                     split.seqlen_k, world_size, layout_name(split.layout));
}

RingSetup ring_setup(const attnrt_attention_desc& desc, const Transport& transport, Layout layout,
                     const Backend& backend, bool backward) {
  // The descriptor itself, as a single-device call would be checked (names the field).
  try {
    sdk::check_desc(desc);
  } catch (const sdk::Error& e) {
    throw Error(e.status(), std::string("context parallel: ") + e.what());
  }
  if (std::string why = feature_refusal(desc); !why.empty()) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED, "context parallel: " + why);
  }
  const int n = transport.world_size();
  const int64_t unit = 2 * n * (layout == Layout::zigzag ? 2 : 1);  // varlen: make_varlen_ring_plan's cut
  RingSetup s;
  s.split =
      desc.is_varlen ? SequenceSplit(layout, n, unit, unit) : SequenceSplit(layout, n, desc.seqlen_q, desc.seqlen_k);
  s.rank = transport.rank();
  s.world_size = n;
  s.varlen = desc.is_varlen != 0;
  if (std::string why = backend_refusal(backend, desc, s.split, backward); !why.empty()) {
    throw Error(ATTNRT_ERROR_UNSUPPORTED, "context parallel: " + why);
  }
  s.plan = s.varlen ? make_varlen_ring_plan(desc, layout, n, s.rank) : make_ring_plan(desc, s.split, s.rank);
  s.batch = desc.batch;
  s.heads_q = desc.heads_q;
  s.heads_kv = desc.heads_kv;
  s.head_dim = desc.head_dim;
  s.head_dim_v = desc.head_dim_v;
  s.shard_q = s.split.shard_q();
  s.shard_k = s.split.shard_k();
  s.dtype = dl_dtype(desc.dtype);
  s.device = desc.device;
  return s;
}

void read_cu_seqlens(RingSetup& s, const attnrt_attention_desc& desc, const DLTensor* cu_seqlens_q,
                     const DLTensor* cu_seqlens_k) {
  if (!s.varlen) return;
  s.packed = varlen_shard(desc, cu_seqlens_q, cu_seqlens_k, s.split.layout, s.world_size);
  s.shard_q = s.shard_k = s.packed.shard_rows;
}

CallSeqlens call_seqlens(const RingSetup& s, BlockOps& ops, void* stream) {
  CallSeqlens c;
  if (!s.varlen) return c;
  const size_t bytes = s.packed.cu_half.size() * sizeof(int32_t);
  c.memory = ops.allocate(bytes, stream);
  ops.upload(s.packed.cu_half.data(), c.memory.get(), bytes, stream);
  c.cu = TensorView(c.memory.get(), {kDLInt, 32, 1}, s.device, {static_cast<int64_t>(s.packed.cu_half.size())});
  return c;
}

RingAttention::RingAttention(Backend& backend, Transport& transport, RingOptions options)
    : backend_(backend), transport_(transport), options_(options) {}

RingAttention::~RingAttention() = default;

std::string RingAttention::unsupported_reason(const attnrt_attention_desc& desc, bool backward) const {
  try {
    (void)ring_setup(desc, transport_, options_.layout, backend_, backward);
  } catch (const Error& e) {
    return e.what();
  }
  if (options_.ops || desc.device.device_type == kDLCPU) return "";
  if (desc.device.device_type == kDLCUDA) return cuda_block_ops_unavailable_reason(desc.device);
  return fmt::format("context parallel: no BlockOps for device_type {} (CPU and CUDA only)",
                     static_cast<int>(desc.device.device_type));
}

RingPlan RingAttention::plan(const attnrt_attention_desc& desc) const {
  if (desc.is_varlen) return make_varlen_ring_plan(desc, options_.layout, transport_.world_size(), transport_.rank());
  return make_ring_plan(desc, SequenceSplit(options_.layout, transport_.world_size(), desc.seqlen_q, desc.seqlen_k),
                        transport_.rank());
}

BlockOps& RingAttention::ops(const attnrt_attention_desc& desc) {
  if (options_.ops) return *options_.ops;
  const DLDevice device = desc.device;
  if (owned_ops_ && owned_ops_->device().device_type == device.device_type &&
      owned_ops_->device().device_id == device.device_id) {
    return *owned_ops_;
  }
  if (device.device_type == kDLCPU) {
    owned_ops_ = host_block_ops();
  } else if (device.device_type == kDLCUDA) {
    owned_ops_ = cuda_block_ops(device);  // throws ATTNRT_ERROR_UNSUPPORTED with the reason
  } else {
    throw Error(ATTNRT_ERROR_UNSUPPORTED, fmt::format("context parallel: no BlockOps for device_type {} (CPU and "
                                                      "CUDA only)",
                                                      static_cast<int>(device.device_type)));
  }
  return *owned_ops_;
}

}  // namespace attnrt::cp
