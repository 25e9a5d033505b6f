// A varlen ring's shard (varlen_shard.hpp).
#include "varlen_shard.hpp"

#include <attnrt/runtime/error.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace attnrt::cp {

namespace {

// The prefix sums of `name` as host integers, checked as the ABI checks a single call's.
std::vector<int64_t> read_cu(const char* name, const DLTensor* t, int32_t batch) {
  if (!t) {
    throw Error(fmt::format(
        "context parallel: varlen needs {} (the whole packed batch's prefix sums, [batch + 1] int32, in host memory)",
        name));
  }
  if (t->ndim != 1 || !t->shape || t->shape[0] != batch + 1 || t->dtype.code != kDLInt || t->dtype.bits != 32 ||
      t->dtype.lanes != 1) {
    throw Error(
        fmt::format("context parallel: {} must be [batch + 1] = [{}] int32 (the whole packed batch's prefix "
                    "sums)",
                    name, batch + 1));
  }
  if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost) {
    throw Error(fmt::format(
        "context parallel: {} must be in host memory (kDLCPU or kDLCUDAHost), got device_type {}: the ring plans its "
        "copies and every block call's cu_seqlens from the lengths on the host (as FlashAttention takes max_seqlen), "
        "so a device copy would cost a synchronization per call; pass the host tensor the device one was made from",
        name, static_cast<int>(t->device.device_type)));
  }
  if (!t->data) throw Error(fmt::format("context parallel: {} has no data", name));
  const auto* c = reinterpret_cast<const int32_t*>(static_cast<const char*>(t->data) + t->byte_offset);
  const int64_t stride = t->strides ? t->strides[0] : 1;
  std::vector<int64_t> v(static_cast<size_t>(batch) + 1);
  for (int32_t b = 0; b <= batch; ++b) v[b] = c[b * stride];
  if (v[0] != 0) throw Error(fmt::format("context parallel: {}[0] must be 0, got {}", name, v[0]));
  for (int32_t b = 0; b < batch; ++b) {
    if (v[b + 1] < v[b]) {
      throw Error(fmt::format("context parallel: {} must be non-decreasing (at index {})", name, b + 1));
    }
  }
  return v;
}

}  // namespace

VarlenShard varlen_shard(const attnrt_attention_desc& desc, const DLTensor* cu_seqlens_q, const DLTensor* cu_seqlens_k,
                         Layout layout, int world_size) {
  const std::vector<int64_t> cq = read_cu("cu_seqlens_q", cu_seqlens_q, desc.batch);
  const std::vector<int64_t> ck = read_cu("cu_seqlens_k", cu_seqlens_k, desc.batch);
  VarlenShard p;
  p.halves = layout == Layout::zigzag ? 2 : 1;
  const int chunks = world_size * p.halves;
  p.cu_half.push_back(0);
  for (int32_t i = 0; i < desc.batch; ++i) {
    const int64_t len = cq[i + 1] - cq[i], len_k = ck[i + 1] - ck[i];
    if (len != len_k) {
      throw Error(ATTNRT_ERROR_UNSUPPORTED,
                  fmt::format("context parallel: sequence {} of the packed batch has {} queries and {} keys: varlen "
                              "context parallelism is self-attention (cu_seqlens_q must equal cu_seqlens_k)",
                              i, len, len_k));
    }
    if (len > desc.seqlen_q) {
      throw Error(
          fmt::format("context parallel: cu_seqlens_q: sequence {} has length {} > max_seqlen {} "
                      "(desc.seqlen_q)",
                      i, len, desc.seqlen_q));
    }
    if (len % chunks != 0) {
      throw Error(fmt::format(
          "context parallel: sequence {} of the packed batch has length {}, not a multiple of {} ({} layout over {} "
          "ranks cuts every sequence into {} equal chunks); pad it to a multiple of {}",
          i, len, chunks, layout_name(layout), world_size, chunks, chunks));
    }
    p.seqlens.push_back(len);
    const int64_t c = len / chunks;
    for (int h = 0; h < p.halves; ++h) {
      const VarlenShard::Segment s{p.shard_rows + h * c, h, p.half_rows, c};
      if (c == 0) continue;
      VarlenShard::Segment* last = p.segments.empty() ? nullptr : &p.segments.back();
      if (last && last->half == s.half && last->shard_row + last->rows == s.shard_row &&
          last->half_row + last->rows == s.half_row) {
        last->rows += c;
      } else {
        p.segments.push_back(s);
      }
    }
    p.shard_rows += p.halves * c;
    p.half_rows += c;
    if (p.half_rows > INT32_MAX) throw Error("context parallel: the packed batch has more than 2^31 rows per chunk");
    p.cu_half.push_back(static_cast<int32_t>(p.half_rows));
  }
  return p;
}

namespace {

// One segment of a half: rows [half_row, half_row + rows) of half `half`, in the rows' dimension.
void move(BlockOps& ops, const VarlenShard& p, const TensorView& shard, const TensorView& halves, bool to_halves,
          void* stream) {
  const int dim = shard.dl()->ndim == 2 ? 1 : 0;  // [rows, heads, dim], or an LSE's [heads, rows]
  for (const VarlenShard::Segment& s : p.segments) {
    TensorView a = shard.slice(dim, s.shard_row, s.shard_row + s.rows);
    TensorView b = halves.slice(0, s.half, s.half + 1).without_dim0().slice(dim, s.half_row, s.half_row + s.rows);
    if (to_halves) {
      ops.copy(*a, *b, stream);
    } else {
      ops.copy(*b, *a, stream);
    }
  }
}

}  // namespace

void shard_to_halves(BlockOps& ops, const VarlenShard& p, const DLTensor& shard, const TensorView& halves,
                     void* stream) {
  move(ops, p, TensorView(shard), halves, true, stream);
}

void halves_to_shard(BlockOps& ops, const VarlenShard& p, const TensorView& halves, const DLTensor& shard,
                     void* stream) {
  move(ops, p, TensorView(shard), halves, false, stream);
}

}  // namespace attnrt::cp
