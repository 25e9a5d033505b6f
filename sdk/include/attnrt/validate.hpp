// Header-only argument checks shared by every plugin (and by the runtime before it calls one).
// Each check throws attnrt::sdk::Error naming the field or tensor and the expectation, in the
// style of FlashAttention's host API ("q: expected shape [2, 128, 8, 64], got [2, 128, 8, 32]").
#ifndef ATTNRT_VALIDATE_HPP_
#define ATTNRT_VALIDATE_HPP_

#include <attnrt/extensions.hpp>
#include <attnrt/status.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace attnrt::sdk {

inline const char* dtype_name(attnrt_dtype dtype) {
  switch (dtype) {
    case ATTNRT_DTYPE_FP32: return "fp32";
    case ATTNRT_DTYPE_FP16: return "fp16";
    case ATTNRT_DTYPE_BF16: return "bf16";
  }
  return "unknown";
}

inline DLDataType dl_dtype(attnrt_dtype dtype) {
  switch (dtype) {
    case ATTNRT_DTYPE_FP16: return DLDataType{kDLFloat, 16, 1};
    case ATTNRT_DTYPE_BF16: return DLDataType{kDLBfloat, 16, 1};
    case ATTNRT_DTYPE_FP32: break;
  }
  return DLDataType{kDLFloat, 32, 1};
}

inline std::string dl_dtype_name(DLDataType t) {
  const char* base = t.code == kDLFloat    ? "float"
                     : t.code == kDLBfloat ? "bfloat"
                     : t.code == kDLInt    ? "int"
                     : t.code == kDLUInt   ? "uint"
                                           : "code?";
  // Appended, not `base + std::to_string(...)`: GCC 12 warns falsely (-Wrestrict, GCC bug
  // 105329) on a literal + std::string&& at -O3, and plugins build this header with -Werror.
  std::string s = base;
  s += std::to_string(t.bits);
  if (t.lanes != 1) (s += 'x') += std::to_string(t.lanes);
  return s;
}

inline std::string device_name(DLDevice d) {
  switch (d.device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda:" + std::to_string(d.device_id);
    default: return "device_type " + std::to_string(d.device_type) + ":" + std::to_string(d.device_id);
  }
}

inline std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

inline std::string shape_string(const DLTensor& t) {
  return shape_string(std::vector<int64_t>(t.shape, t.shape + (t.ndim > 0 ? t.ndim : 0)));
}

[[noreturn]] inline void invalid(const std::string& what) { throw Error(ATTNRT_ERROR_INVALID_ARGUMENT, what); }

// Checks one tensor: present, on `device`, of `dtype` and `dims` (-1 = any extent), with a
// contiguous last dimension and an element-aligned data pointer.
inline void check_tensor(const char* name, const DLTensor* t, const std::vector<int64_t>& dims, DLDataType dtype,
                         DLDevice device) {
  const std::string n = name;
  if (t == nullptr) invalid(n + ": required tensor is NULL");
  if (t->ndim != static_cast<int32_t>(dims.size()) || t->shape == nullptr) {
    std::string got = std::to_string(t->ndim);
    if (t->shape) (got += ' ') += shape_string(*t);
    invalid(n + ": expected " + std::to_string(dims.size()) + " dimensions " + shape_string(dims) + ", got " + got);
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (t->shape[i] < 0 || (dims[i] >= 0 && t->shape[i] != dims[i])) {
      invalid(n + ": expected shape " + shape_string(dims) + ", got " + shape_string(*t));
    }
  }
  if (t->dtype.code != dtype.code || t->dtype.bits != dtype.bits || t->dtype.lanes != dtype.lanes) {
    invalid(n + ": expected dtype " + dl_dtype_name(dtype) + ", got " + dl_dtype_name(t->dtype));
  }
  if (t->device.device_type != device.device_type || t->device.device_id != device.device_id) {
    invalid(n + ": expected on " + device_name(device) + ", got " + device_name(t->device));
  }
  int64_t numel = 1;
  for (int i = 0; i < t->ndim; ++i) numel *= t->shape[i];
  if (numel > 0 && t->data == nullptr) invalid(n + ": data pointer is NULL");
  const size_t elem = (dtype.bits * dtype.lanes + 7) / 8;
  const auto address = reinterpret_cast<uintptr_t>(t->data) + t->byte_offset;
  if (elem > 0 && address % elem != 0) {
    invalid(n + ": data pointer + byte_offset is not aligned to its " + std::to_string(elem) + "-byte element");
  }
  if (t->strides != nullptr && t->ndim > 0 && t->shape[t->ndim - 1] > 1 && t->strides[t->ndim - 1] != 1) {
    invalid(n + ": last dimension must be contiguous (stride 1), got stride " +
            std::to_string(t->strides[t->ndim - 1]));
  }
  if (t->strides != nullptr) {
    for (int i = 0; i < t->ndim; ++i) {
      if (t->strides[i] < 0) invalid(n + ": negative strides are not supported");
    }
  }
}

// The descriptor's extension chain (ABI 1.1) is well formed: every block at least a header,
// none of the reserved type 0, at most ATTNRT_EXTENSION_CHAIN_MAX of them (which ends a cycle).
// desc.extensions is read only when the descriptor's writer knew it (a 1.0 writer's: no chain).
// Throws Error(ATTNRT_ERROR_INVALID_ARGUMENT) naming the block. Whether a plugin implements
// the blocks is another question: unimplemented_extension_reason (plugin.hpp).
inline void check_extensions(const attnrt_attention_desc& d) {
  if (std::string error = extension_chain_error(d); !error.empty()) invalid(error);
}

// Limits of a flex_attention block (ABI 1.3), documented in the SDK README.
inline constexpr int32_t kFlexMaxAux = 16;
inline constexpr int32_t kFlexMaxScalars = 64;
inline constexpr size_t kFlexMaxSourceBytes = 64 * 1024;

namespace detail {
// One block-mask tensor of a flex block: int32 on the call's device, `dims` as the descriptor
// implies, where a -2 entry means "1 or that extent" (PyTorch's broadcast batch and head).
inline void check_block_mask_tensor(const char* name, const DLTensor* t, const std::vector<int64_t>& dims,
                                    DLDevice device) {
  std::vector<int64_t> want = dims;
  if (t != nullptr && t->shape != nullptr && t->ndim == static_cast<int32_t>(dims.size())) {
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] <= -2 && t->shape[i] == 1) want[i] = 1;
      if (dims[i] <= -2 && t->shape[i] != 1) want[i] = -2 - dims[i];
    }
  }
  for (int64_t& w : want) {
    if (w <= -2) w = -2 - w;
  }
  check_tensor(name, t, want, DLDataType{kDLInt, 32, 1}, device);
}
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// -2 - extent: "1 or extent" in check_block_mask_tensor's dims.
inline int64_t one_or(int64_t extent) { return -2 - extent; }
}  // namespace detail

// The flex_attention block of d, when there is one, is well formed: its size, mods no longer
// than kFlexMaxSourceBytes, aux tensors (int32/int64/float32, 1-4 dims, on the call's device),
// scalars, and the block mask's shapes ([B or 1, heads_q or 1, blocks...], int32; plugin_abi.h,
// attnrt_flex_attention). Does not read tensor data (it may live on a GPU).
inline void check_flex(const attnrt_attention_desc& d) {
  const attnrt_flex_attention* f = flex_block(d);
  if (f == nullptr) return;
  if (f->header.struct_size < ATTNRT_FLEX_ATTENTION_SIZE_V1_3) {
    invalid("flex_attention block: struct_size " + std::to_string(f->header.struct_size) +
            " is smaller than ABI 1.3's " + std::to_string(ATTNRT_FLEX_ATTENTION_SIZE_V1_3));
  }
  for (const auto& [name, text] : {std::pair{"score_mod", f->score_mod}, std::pair{"mask_mod", f->mask_mod},
                                   std::pair{"score_mod_grad", f->score_mod_grad}}) {
    if (text != nullptr && std::strlen(text) > kFlexMaxSourceBytes) {
      invalid(std::string("flex_attention.") + name + ": source longer than " + std::to_string(kFlexMaxSourceBytes) +
              " bytes");
    }
  }
  if (f->num_aux < 0 || f->num_aux > kFlexMaxAux) {
    invalid("flex_attention.num_aux must be in [0, " + std::to_string(kFlexMaxAux) + "], got " +
            std::to_string(f->num_aux));
  }
  if (f->num_aux > 0 && f->aux == nullptr)
    invalid("flex_attention.aux is NULL with num_aux " + std::to_string(f->num_aux));
  for (int32_t i = 0; i < f->num_aux; ++i) {
    const std::string name = "flex_attention.aux[" + std::to_string(i) + "]";
    const DLTensor* t = f->aux[i];
    if (t == nullptr) invalid(name + ": NULL");
    if (t->ndim < 1 || t->ndim > 4 || t->shape == nullptr) {
      invalid(name + ": expected 1 to 4 dimensions, got " + std::to_string(t->ndim));
    }
    const DLDataType dt = t->dtype;
    const bool ok = dt.lanes == 1 &&
                    ((dt.code == kDLInt && (dt.bits == 32 || dt.bits == 64)) || (dt.code == kDLFloat && dt.bits == 32));
    if (!ok) invalid(name + ": expected dtype int32, int64 or float32, got " + dl_dtype_name(dt));
    if (t->device.device_type != d.device.device_type || t->device.device_id != d.device.device_id) {
      invalid(name + ": expected on " + device_name(d.device) + ", got " + device_name(t->device));
    }
    int64_t numel = 1;
    for (int k = 0; k < t->ndim; ++k) {
      if (t->shape[k] < 0) invalid(name + ": negative extent in shape " + shape_string(*t));
      if (t->strides != nullptr && t->strides[k] < 0) invalid(name + ": negative strides are not supported");
      numel *= t->shape[k];
    }
    if (numel > 0 && t->data == nullptr) invalid(name + ": data pointer is NULL");
  }
  if (f->num_scalars < 0 || f->num_scalars > kFlexMaxScalars) {
    invalid("flex_attention.num_scalars must be in [0, " + std::to_string(kFlexMaxScalars) + "], got " +
            std::to_string(f->num_scalars));
  }
  if (f->num_scalars > 0 && f->scalars == nullptr) {
    invalid("flex_attention.scalars is NULL with num_scalars " + std::to_string(f->num_scalars));
  }
  const bool any_mask = f->kv_num_blocks || f->kv_indices || f->full_kv_num_blocks || f->full_kv_indices ||
                        f->q_num_blocks || f->q_indices || f->full_q_num_blocks || f->full_q_indices;
  if (!any_mask) return;
  if (f->kv_num_blocks == nullptr) {
    invalid("flex_attention: a block-mask tensor is given but kv_num_blocks is NULL (it is the mask's required part)");
  }
  if (f->q_block_size <= 0 || f->kv_block_size <= 0) {
    invalid("flex_attention: q_block_size and kv_block_size must be > 0 with a block mask, got " +
            std::to_string(f->q_block_size) + " and " + std::to_string(f->kv_block_size));
  }
  const int64_t B = detail::one_or(d.batch), H = detail::one_or(d.heads_q);
  const int64_t mq = detail::ceil_div(d.seqlen_q, f->q_block_size), mk = detail::ceil_div(d.seqlen_k, f->kv_block_size);
  auto pair = [&](const char* num_name, const DLTensor* num, const char* idx_name, const DLTensor* idx, int64_t blocks,
                  bool optional) {
    if (optional && num == nullptr && idx == nullptr) return;
    if ((num == nullptr) != (idx == nullptr)) {
      invalid(std::string("flex_attention: ") + num_name + " and " + idx_name + " come together (one is NULL)");
    }
    detail::check_block_mask_tensor(num_name, num, {B, H, blocks}, d.device);
    check_tensor(idx_name, idx, {num->shape[0], num->shape[1], blocks, -1}, DLDataType{kDLInt, 32, 1}, d.device);
  };
  pair("flex_attention.kv_num_blocks", f->kv_num_blocks, "flex_attention.kv_indices", f->kv_indices, mq, false);
  pair("flex_attention.full_kv_num_blocks", f->full_kv_num_blocks, "flex_attention.full_kv_indices", f->full_kv_indices,
       mq, true);
  pair("flex_attention.q_num_blocks", f->q_num_blocks, "flex_attention.q_indices", f->q_indices, mk, true);
  pair("flex_attention.full_q_num_blocks", f->full_q_num_blocks, "flex_attention.full_q_indices", f->full_q_indices, mk,
       true);
  // One batch and head extent for every list, as the lists of PyTorch's BlockMask share (a kernel
  // that builds its per-block states at kv_num_blocks' extents would read another list's first
  // batch or head for all of them).
  const DLTensor* base = f->kv_num_blocks;
  for (const auto& [name, num] : {std::pair<const char*, const DLTensor*>{"full_kv_num_blocks", f->full_kv_num_blocks},
                                  {"q_num_blocks", f->q_num_blocks},
                                  {"full_q_num_blocks", f->full_q_num_blocks}}) {
    if (num != nullptr && (num->shape[0] != base->shape[0] || num->shape[1] != base->shape[1])) {
      invalid(std::string("flex_attention.") + name + ": batch and head extents [" + std::to_string(num->shape[0]) +
              ", " + std::to_string(num->shape[1]) + "] differ from kv_num_blocks' [" + std::to_string(base->shape[0]) +
              ", " + std::to_string(base->shape[1]) + "] (a block mask's lists share them, as PyTorch's BlockMask's)");
    }
  }
}

// Well-formedness of the descriptor itself (not whether a plugin supports it).
inline void check_desc(const attnrt_attention_desc& d) {
  if (d.struct_size < ATTNRT_ATTENTION_DESC_SIZE_V1_0) {
    invalid("desc: struct_size " + std::to_string(d.struct_size) + " is smaller than ABI 1.0's " +
            std::to_string(ATTNRT_ATTENTION_DESC_SIZE_V1_0));
  }
  check_extensions(d);
  check_flex(d);
  if (d.dtype != ATTNRT_DTYPE_FP32 && d.dtype != ATTNRT_DTYPE_FP16 && d.dtype != ATTNRT_DTYPE_BF16) {
    invalid("desc.dtype: unknown value " + std::to_string(static_cast<int>(d.dtype)));
  }
  auto positive = [](const char* field, int64_t value) {
    if (value <= 0) invalid(std::string("desc.") + field + " must be > 0, got " + std::to_string(value));
  };
  positive("head_dim", d.head_dim);
  positive("head_dim_v", d.head_dim_v);
  positive("heads_q", d.heads_q);
  positive("heads_kv", d.heads_kv);
  positive("batch", d.batch);
  positive("seqlen_q", d.seqlen_q);
  positive("seqlen_k", d.seqlen_k);
  if (d.heads_q % d.heads_kv != 0) {
    invalid("desc: heads_q (" + std::to_string(d.heads_q) + ") must be a multiple of heads_kv (" +
            std::to_string(d.heads_kv) + ")");
  }
  if (!std::isfinite(d.softmax_scale)) invalid("desc.softmax_scale must be finite");
  if (d.window_left < -1 || d.window_right < -1) {
    invalid("desc: window_left/window_right must be >= -1 (-1: unlimited), got (" + std::to_string(d.window_left) +
            ", " + std::to_string(d.window_right) + ")");
  }
  if (!(d.softcap >= 0.0f) || !std::isfinite(d.softcap)) {
    invalid("desc.softcap must be finite and >= 0, got " + std::to_string(d.softcap));
  }
  if (!(d.dropout_p >= 0.0f && d.dropout_p < 1.0f)) {
    invalid("desc.dropout_p must be in [0, 1), got " + std::to_string(d.dropout_p));
  }
  if (d.is_paged && d.page_size <= 0) {
    invalid("desc.page_size must be > 0 with paged KV, got " + std::to_string(d.page_size));
  }
  // ABI 1.2: is_paged with is_varlen is packed queries (cu_seqlens_q) over a paged cache.
}

// The window the call really uses: causal is window_right = 0 (FlashAttention-2's convention).
inline int32_t effective_window_right(const attnrt_attention_desc& d) { return d.causal ? 0 : d.window_right; }

// Why `caps` cannot honour `d` ("" when it can). Plugins call this first in supports().
inline std::string capability_gap(const attnrt_capabilities& caps, const attnrt_attention_desc& d) {
  uint32_t device_bit = 0;
  if (d.device.device_type == kDLCPU) device_bit = ATTNRT_DEVICE_BIT_CPU;
  if (d.device.device_type == kDLCUDA) device_bit = ATTNRT_DEVICE_BIT_CUDA;
  if ((caps.devices & device_bit) == 0) return "device " + device_name(d.device) + " is not supported";
  if (d.device.device_type == kDLCUDA) {
    if (caps.min_cuda_arch > 0 && d.cuda_arch < caps.min_cuda_arch) {
      return "compute capability sm_" + std::to_string(d.cuda_arch) + " < required sm_" +
             std::to_string(caps.min_cuda_arch);
    }
    if (caps.max_cuda_arch > 0 && d.cuda_arch > caps.max_cuda_arch) {
      return "compute capability sm_" + std::to_string(d.cuda_arch) + " > supported sm_" +
             std::to_string(caps.max_cuda_arch);
    }
  }
  const uint32_t dtype_bit = 1u << static_cast<uint32_t>(d.dtype);
  if ((caps.dtypes & dtype_bit) == 0) return std::string("dtype ") + dtype_name(d.dtype) + " is not supported";
  for (int32_t hd : {d.head_dim, d.head_dim_v}) {
    if (caps.max_head_dim > 0 && hd > caps.max_head_dim) {
      return "head_dim " + std::to_string(hd) + " > " + std::to_string(caps.max_head_dim);
    }
    if (hd < caps.min_head_dim) {
      return "head_dim " + std::to_string(hd) + " < " + std::to_string(caps.min_head_dim);
    }
  }
  struct Need {
    bool requested;
    uint64_t bit;
    const char* what;
  };
  const Need needs[] = {
      {d.heads_q != d.heads_kv, ATTNRT_FEATURE_GQA, "GQA/MQA (heads_q != heads_kv)"},
      {d.causal != 0, ATTNRT_FEATURE_CAUSAL, "causal masking"},
      {d.window_left >= 0 || (d.window_right >= 0 && !d.causal), ATTNRT_FEATURE_SLIDING_WINDOW, "sliding window"},
      {d.softcap > 0.0f, ATTNRT_FEATURE_SOFTCAP, "softcap"},
      {d.has_sinks != 0, ATTNRT_FEATURE_SINKS, "attention sinks"},
      {d.has_alibi != 0, ATTNRT_FEATURE_ALIBI, "ALiBi"},
      {d.is_varlen != 0, ATTNRT_FEATURE_VARLEN, "varlen (cu_seqlens)"},
      {d.is_paged != 0, ATTNRT_FEATURE_PAGED_KV, "paged KV cache"},
      {d.is_paged != 0 && d.is_varlen != 0, ATTNRT_FEATURE_PAGED_VARLEN_Q,
       "varlen queries over a paged KV cache (chunked prefill)"},
      {d.dropout_p > 0.0f, ATTNRT_FEATURE_DROPOUT, "dropout"},
      {d.return_lse != 0, ATTNRT_FEATURE_LSE, "returning LSE"},
      {d.deterministic != 0, ATTNRT_FEATURE_DETERMINISTIC, "deterministic mode"},
      {d.head_dim_v != d.head_dim, ATTNRT_FEATURE_HEAD_DIM_V, "head_dim_v != head_dim"},
  };
  for (const Need& n : needs) {
    if (n.requested && (caps.features & n.bit) == 0) return std::string(n.what) + " is not supported";
  }
  return "";
}

namespace detail {
inline DLDataType i32() { return DLDataType{kDLInt, 32, 1}; }
inline DLDataType f32() { return DLDataType{kDLFloat, 32, 1}; }

// Host-readable int32 vector (CPU only), used to check cu_seqlens and friends.
inline const int32_t* host_i32(const DLTensor* t) {
  return reinterpret_cast<const int32_t*>(static_cast<const char*>(t->data) + t->byte_offset);
}

inline void check_cu_seqlens(const char* name, const DLTensor* cu, int32_t batch, int64_t total, int32_t max_seqlen,
                             DLDevice device) {
  check_tensor(name, cu, {batch + 1}, i32(), device);
  if (device.device_type != kDLCPU) return;  // contents live on the device; trusted
  const int32_t* c = host_i32(cu);
  const int64_t stride = cu->strides ? cu->strides[0] : 1;
  if (c[0] != 0) invalid(std::string(name) + "[0] must be 0, got " + std::to_string(c[0]));
  for (int32_t b = 0; b < batch; ++b) {
    const int64_t len = static_cast<int64_t>(c[(b + 1) * stride]) - c[b * stride];
    if (len < 0) invalid(std::string(name) + " must be non-decreasing (at index " + std::to_string(b + 1) + ")");
    if (len > max_seqlen) {
      invalid(std::string(name) + ": sequence " + std::to_string(b) + " has length " + std::to_string(len) +
              " > max_seqlen " + std::to_string(max_seqlen));
    }
  }
  if (c[batch * stride] != total) {
    invalid(std::string(name) + "[batch] must equal the packed length " + std::to_string(total) + ", got " +
            std::to_string(c[batch * stride]));
  }
}

struct QkvShapes {
  std::vector<int64_t> q, k, v, out, lse;
};

inline QkvShapes expected_shapes(const attnrt_attention_desc& d, const DLTensor* q, const DLTensor* k) {
  QkvShapes s;
  const int64_t total_q = (d.is_varlen && q && q->ndim == 3 && q->shape) ? q->shape[0] : -1;
  const int64_t total_k = (d.is_varlen && k && k->ndim == 3 && k->shape) ? k->shape[0] : -1;
  if (d.is_varlen && d.is_paged) {  // ABI 1.2: packed queries over a paged cache
    const int64_t pages = (k && k->ndim == 4 && k->shape) ? k->shape[0] : -1;
    s.q = {total_q, d.heads_q, d.head_dim};
    s.k = {pages, d.page_size, d.heads_kv, d.head_dim};
    s.v = {pages, d.page_size, d.heads_kv, d.head_dim_v};
    s.out = {total_q, d.heads_q, d.head_dim_v};
    s.lse = {d.heads_q, total_q};
  } else if (d.is_varlen) {
    s.q = {total_q, d.heads_q, d.head_dim};
    s.k = {total_k, d.heads_kv, d.head_dim};
    s.v = {total_k, d.heads_kv, d.head_dim_v};
    s.out = {total_q, d.heads_q, d.head_dim_v};
    s.lse = {d.heads_q, total_q};
  } else if (d.is_paged) {
    const int64_t pages = (k && k->ndim == 4 && k->shape) ? k->shape[0] : -1;
    s.q = {d.batch, d.seqlen_q, d.heads_q, d.head_dim};
    s.k = {pages, d.page_size, d.heads_kv, d.head_dim};
    s.v = {pages, d.page_size, d.heads_kv, d.head_dim_v};
    s.out = {d.batch, d.seqlen_q, d.heads_q, d.head_dim_v};
    s.lse = {d.batch, d.heads_q, d.seqlen_q};
  } else {
    s.q = {d.batch, d.seqlen_q, d.heads_q, d.head_dim};
    s.k = {d.batch, d.seqlen_k, d.heads_kv, d.head_dim};
    s.v = {d.batch, d.seqlen_k, d.heads_kv, d.head_dim_v};
    s.out = {d.batch, d.seqlen_q, d.heads_q, d.head_dim_v};
    s.lse = {d.batch, d.heads_q, d.seqlen_q};
  }
  return s;
}

template <class Args>
void check_optional_inputs(const attnrt_attention_desc& d, const Args& a, const QkvShapes& s) {
  const DLDevice dev = d.device;
  if (d.has_sinks) check_tensor("sinks", a.sinks, {d.heads_q}, f32(), dev);
  if (d.has_alibi) {
    if (a.alibi_slopes != nullptr && a.alibi_slopes->ndim == 2) {
      check_tensor("alibi_slopes", a.alibi_slopes, {d.batch, d.heads_q}, f32(), dev);
    } else {
      check_tensor("alibi_slopes", a.alibi_slopes, {d.heads_q}, f32(), dev);
    }
  }
  if (d.is_varlen) {
    check_cu_seqlens("cu_seqlens_q", a.cu_seqlens_q, d.batch, s.q[0], d.seqlen_q, dev);
    // Paged: the keys come from the cache by seqused_k; cu_seqlens_k is not read.
    if (!d.is_paged) check_cu_seqlens("cu_seqlens_k", a.cu_seqlens_k, d.batch, s.k[0], d.seqlen_k, dev);
    if (a.seqused_k != nullptr) check_tensor("seqused_k", a.seqused_k, {d.batch}, i32(), dev);
  }
  if (d.is_paged) {
    check_tensor("block_table", a.block_table, {d.batch, -1}, i32(), dev);
    check_tensor("seqused_k", a.seqused_k, {d.batch}, i32(), dev);
    if (dev.device_type == kDLCPU) {
      const int64_t pages = s.k[0];
      const int64_t max_pages = a.block_table->shape[1];
      const int32_t* used = host_i32(a.seqused_k);
      const int32_t* table = host_i32(a.block_table);
      const int64_t ts = a.block_table->strides ? a.block_table->strides[0] : max_pages;
      for (int32_t b = 0; b < d.batch; ++b) {
        if (used[b] < 0 || used[b] > d.seqlen_k || used[b] > max_pages * d.page_size) {
          invalid("seqused_k[" + std::to_string(b) + "] = " + std::to_string(used[b]) +
                  " is outside [0, min(seqlen_k, pages * page_size)]");
        }
        const int64_t need = (used[b] + d.page_size - 1) / d.page_size;
        for (int64_t p = 0; p < need; ++p) {
          const int32_t page = table[b * ts + p];
          if (page < 0 || page >= pages) {
            invalid("block_table[" + std::to_string(b) + ", " + std::to_string(p) + "] = " + std::to_string(page) +
                    " is outside [0, " + std::to_string(pages) + ")");
          }
        }
      }
    }
  }
}
}  // namespace detail

// Validates a forward call completely; throws Error(ATTNRT_ERROR_INVALID_ARGUMENT) on the first
// problem, naming it.
inline void check_forward(const attnrt_attention_desc& d, const attnrt_forward_args& a) {
  check_desc(d);
  if (a.struct_size < ATTNRT_FORWARD_ARGS_SIZE_V1_0) {
    invalid("forward args: struct_size " + std::to_string(a.struct_size) + " is too small");
  }
  const DLDataType dt = dl_dtype(d.dtype);
  const auto s = detail::expected_shapes(d, a.q, a.k);
  check_tensor("q", a.q, s.q, dt, d.device);
  check_tensor("k", a.k, s.k, dt, d.device);
  check_tensor("v", a.v, s.v, dt, d.device);
  check_tensor("out", a.out, s.out, dt, d.device);
  if (d.return_lse) check_tensor("lse", a.lse, s.lse, detail::f32(), d.device);
  detail::check_optional_inputs(d, a, s);
}

inline void check_backward(const attnrt_attention_desc& d, const attnrt_backward_args& a) {
  check_desc(d);
  if (a.struct_size < ATTNRT_BACKWARD_ARGS_SIZE_V1_0) {
    invalid("backward args: struct_size " + std::to_string(a.struct_size) + " is too small");
  }
  const DLDataType dt = dl_dtype(d.dtype);
  const auto s = detail::expected_shapes(d, a.q, a.k);
  check_tensor("q", a.q, s.q, dt, d.device);
  check_tensor("k", a.k, s.k, dt, d.device);
  check_tensor("v", a.v, s.v, dt, d.device);
  check_tensor("out", a.out, s.out, dt, d.device);
  check_tensor("dout", a.dout, s.out, dt, d.device);
  check_tensor("lse", a.lse, s.lse, detail::f32(), d.device);
  check_tensor("dq", a.dq, s.q, dt, d.device);
  check_tensor("dk", a.dk, s.k, dt, d.device);
  check_tensor("dv", a.dv, s.v, dt, d.device);
  if (d.has_sinks) check_tensor("dsinks", a.dsinks, {d.heads_q}, detail::f32(), d.device);
  detail::check_optional_inputs(d, a, s);
}

// Validates a KV-cache append (ABI 1.2, attnrt_append_kv_args) for the paged descriptor `d`
// (dtype, heads_kv, head_dim, head_dim_v, page_size, device): shapes, dtypes, devices, and on the
// CPU every slot inside the cache. Throws Error(ATTNRT_ERROR_INVALID_ARGUMENT) naming the tensor.
inline void check_append_kv(const attnrt_attention_desc& d, const attnrt_append_kv_args& a) {
  check_desc(d);
  if (a.struct_size < ATTNRT_APPEND_KV_ARGS_SIZE_V1_2) {
    invalid("append_kv args: struct_size " + std::to_string(a.struct_size) + " is smaller than ABI 1.2's " +
            std::to_string(ATTNRT_APPEND_KV_ARGS_SIZE_V1_2));
  }
  if (!d.is_paged) invalid("append_kv: desc.is_paged must be set (the cache is paged)");
  const DLDataType dt = dl_dtype(d.dtype);
  const int64_t tokens = (a.k_new && a.k_new->ndim == 3 && a.k_new->shape) ? a.k_new->shape[0] : -1;
  const int64_t pages = (a.k_cache && a.k_cache->ndim == 4 && a.k_cache->shape) ? a.k_cache->shape[0] : -1;
  check_tensor("k_new", a.k_new, {tokens, d.heads_kv, d.head_dim}, dt, d.device);
  check_tensor("v_new", a.v_new, {tokens, d.heads_kv, d.head_dim_v}, dt, d.device);
  check_tensor("slot_mapping", a.slot_mapping, {tokens}, DLDataType{kDLInt, 64, 1}, d.device);
  check_tensor("k_cache", a.k_cache, {pages, d.page_size, d.heads_kv, d.head_dim}, dt, d.device);
  check_tensor("v_cache", a.v_cache, {pages, d.page_size, d.heads_kv, d.head_dim_v}, dt, d.device);
  if (d.device.device_type != kDLCPU) return;  // slots live on the device: the caller's promise
  const auto* slots =
      reinterpret_cast<const int64_t*>(static_cast<const char*>(a.slot_mapping->data) + a.slot_mapping->byte_offset);
  const int64_t stride = a.slot_mapping->strides ? a.slot_mapping->strides[0] : 1;
  for (int64_t n = 0; n < tokens; ++n) {
    const int64_t slot = slots[n * stride];
    if (slot >= pages * d.page_size) {
      invalid("slot_mapping[" + std::to_string(n) + "] = " + std::to_string(slot) + " is outside the cache's " +
              std::to_string(pages) + " pages x " + std::to_string(d.page_size) + " slots");
    }
  }
}

// Validates create_block_mask's call (ABI 1.4, attnrt_block_mask_args): the descriptor (check_desc)
// carries a flex block with block sizes > 0 and no block mask of its own, and the outputs are
// int32 on desc.device with the shapes plugin_abi.h gives, one Bm (1 or batch) and Hm (1 or
// heads_q) for all, each pair given whole or not at all. Throws Error(INVALID_ARGUMENT) naming
// the tensor or field.
inline void check_block_mask_args(const attnrt_attention_desc& d, const attnrt_block_mask_args& a) {
  check_desc(d);
  if (a.struct_size < ATTNRT_BLOCK_MASK_ARGS_SIZE_V1_4) {
    invalid("create_block_mask args: struct_size " + std::to_string(a.struct_size) + " is smaller than ABI 1.4's " +
            std::to_string(ATTNRT_BLOCK_MASK_ARGS_SIZE_V1_4));
  }
  const attnrt_flex_attention* f = flex_block(d);
  if (f == nullptr) {
    invalid("the descriptor carries no flex_attention block (the mask_mod to evaluate)");
  }
  if (f->kv_num_blocks || f->kv_indices || f->full_kv_num_blocks || f->full_kv_indices || f->q_num_blocks ||
      f->q_indices || f->full_q_num_blocks || f->full_q_indices) {
    invalid("the flex_attention block's block-mask tensors must be NULL (the call builds them)");
  }
  if (f->q_block_size <= 0 || f->kv_block_size <= 0) {
    invalid("flex_attention.q_block_size and kv_block_size must be > 0, got " + std::to_string(f->q_block_size) +
            " and " + std::to_string(f->kv_block_size));
  }
  const int64_t mq = detail::ceil_div(d.seqlen_q, f->q_block_size), mk = detail::ceil_div(d.seqlen_k, f->kv_block_size);
  if (a.kv_num_blocks == nullptr || a.kv_indices == nullptr) {
    invalid(std::string(a.kv_num_blocks ? "kv_indices" : "kv_num_blocks") +
            " is NULL (kv_num_blocks and kv_indices are required)");
  }
  detail::check_block_mask_tensor("kv_num_blocks", a.kv_num_blocks,
                                  {detail::one_or(d.batch), detail::one_or(d.heads_q), mq}, d.device);
  const int64_t bm = a.kv_num_blocks->shape[0], hm = a.kv_num_blocks->shape[1];
  auto pair = [&](const char* num_name, const DLTensor* num, const char* idx_name, const DLTensor* idx, int64_t rows,
                  int64_t width) {
    if (num == nullptr && idx == nullptr) return;
    if ((num == nullptr) != (idx == nullptr)) {
      invalid(std::string(num_name) + " and " + idx_name + " come together (one is NULL)");
    }
    check_tensor(num_name, num, {bm, hm, rows}, DLDataType{kDLInt, 32, 1}, d.device);
    check_tensor(idx_name, idx, {bm, hm, rows, width}, DLDataType{kDLInt, 32, 1}, d.device);
  };
  pair("kv_num_blocks", a.kv_num_blocks, "kv_indices", a.kv_indices, mq, mk);
  pair("full_kv_num_blocks", a.full_kv_num_blocks, "full_kv_indices", a.full_kv_indices, mq, mk);
  pair("q_num_blocks", a.q_num_blocks, "q_indices", a.q_indices, mk, mq);
  pair("full_q_num_blocks", a.full_q_num_blocks, "full_q_indices", a.full_q_indices, mk, mq);
}

// Throws Error(ATTNRT_ERROR_UNSUPPORTED, reason) unless reason is empty: what forward and
// backward call with the support query's answer, so a call never computes something else.
inline void require_supported(const std::string& reason) {
  if (!reason.empty()) throw Error(ATTNRT_ERROR_UNSUPPORTED, reason);
}

// Throws Error(ATTNRT_ERROR_OUT_OF_MEMORY) when the host's workspace is smaller than `need`.
inline void require_workspace(const attnrt_exec& exec, size_t need, int num_threads) {
  if (exec.workspace_size < need || (need > 0 && exec.workspace == nullptr)) {
    throw Error(ATTNRT_ERROR_OUT_OF_MEMORY, "workspace of " + std::to_string(exec.workspace_size) +
                                                " bytes is too small: " + std::to_string(need) + " needed for " +
                                                std::to_string(num_threads) + " threads");
  }
}

}  // namespace attnrt::sdk

#endif  // ATTNRT_VALIDATE_HPP_
