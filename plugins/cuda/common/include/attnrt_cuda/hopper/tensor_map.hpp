// Host side of TMA: the CUtensorMap of one q/k/v-like tensor (params.hpp's TensorRef: tokens x
// heads x head_dim, batch-strided or packed), as boxes of 64 columns (128 bytes, the 128-byte
// swizzle's width) x `box_rows` tokens of one head of one sequence. The driver's encoder is
// reached through the runtime's entry-point query, so plugins still link no libcuda.
#pragma once

#include <attnrt/plugin.hpp>
#include <attnrt_cuda/params.hpp>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace attnrt::cuda::hopper {

inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult status{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &status) !=
            cudaSuccess ||
        status != cudaDriverEntryPointSuccess) {
      p = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

// `tokens`: rows per sequence (batch-strided) or all rows (packed, batch = 1). A tensor without
// rows (seqlen_k 0) gets a one-row map over `fallback` memory: no box is ever loaded from it.
inline CUtensorMap make_tensor_map(const char* name, const TensorRef& t, bool bf16, int64_t tokens, int heads,
                                   int batch, int head_dim, int box_rows, const void* fallback) {
  auto encode = tensor_map_encoder();
  if (!encode) throw sdk::Error(ATTNRT_ERROR_DEVICE, "the CUDA driver has no cuTensorMapEncodeTiled (TMA)");
  const bool empty = tokens <= 0 || heads <= 0 || batch <= 0;
  void* base = empty ? const_cast<void*>(fallback) : t.data;
  const cuuint64_t row_bytes = cuuint64_t(t.row_stride) * 2, head_bytes = cuuint64_t(t.head_stride) * 2;
  cuuint64_t dims[4] = {cuuint64_t(head_dim), empty ? 1 : cuuint64_t(tokens), empty ? 1 : cuuint64_t(heads),
                        empty ? 1 : cuuint64_t(batch)};
  // Extents of 1 may come with any stride (DLPack); give them one the encoder accepts.
  cuuint64_t strides[3] = {dims[1] > 1 ? row_bytes : 16 * ((cuuint64_t(head_dim) * 2 + 15) / 16),
                           dims[2] > 1 ? head_bytes : 16, dims[3] > 1 ? cuuint64_t(t.batch_stride) * 2 : 16};
  cuuint32_t box[4] = {64, cuuint32_t(box_rows), 1, 1};
  cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  CUtensorMap map;
  const CUresult r = encode(&map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, base,
                            dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, std::string(name) +
                                                   ": no TMA descriptor for this layout (driver error " +
                                                   std::to_string(int(r)) + "; strides must be multiples of 16 bytes)");
  }
  return map;
}

// A call's q/k/v-like tensors as TMA sees them. Packed (varlen) tensors are one sequence of all
// rows; the kernels add each sequence's first row to their coordinates. A paged cache is
// num_pages sequences of page_size rows, which a forward's producer indexes through the block
// table.
struct CallLayout {
  bool bf16;
  int batch;
  int64_t q_rows, k_rows;
  int k_batch;
  // `t`'s map (heads and head_dim its own) of boxes of `box_rows` rows; map_batch: k_batch for
  // the cache of a paged call, else the call's batch.
  CUtensorMap map(const char* name, const TensorRef& t, const AttentionParams& p, int64_t rows, int heads, int hd,
                  int box_rows, int map_batch = -1) const {
    return make_tensor_map(name, t, bf16, rows, heads, map_batch < 0 ? batch : map_batch, hd, box_rows, p.q.data);
  }
  // The forward's O map, boxes of 64 rows (a consumer warpgroup's), into `map`; false where O
  // cannot leave by TMA stores: a packed (varlen) call, whose boxes would cross into the next
  // sequence's rows, or an output layout the encoder refuses (the kernel's own stores take it).
  bool out_map(const AttentionParams& p, int hd, CUtensorMap* map) const {
    if (p.cu_seqlens_q != nullptr || p.out.data == nullptr) return false;
    try {
      *map = make_tensor_map("out", p.out, bf16, q_rows, p.heads_q, batch, hd, 64, p.q.data);
    } catch (const sdk::Error&) {
      return false;
    }
    return true;
  }
};

inline CallLayout call_layout(const attnrt_attention_desc& d, const DLTensor* q, const DLTensor* k) {
  const bool bf16 = d.dtype == ATTNRT_DTYPE_BF16, varlen = d.is_varlen != 0;
  const int batch = varlen ? 1 : d.batch;
  const int64_t q_rows = varlen ? q->shape[0] : d.seqlen_q;
  if (d.is_paged) return {bf16, batch, q_rows, d.page_size, static_cast<int>(k->shape[0])};
  return {bf16, batch, q_rows, varlen ? k->shape[0] : d.seqlen_k, batch};
}

}  // namespace attnrt::cuda::hopper
