// The arguments of the CUDA BlockOps kernels (cuda_block_kernels.cu), shared by the kernels and
// by the host code that launches them through the driver API (cuda_block_ops.cpp). Each kernel
// takes one of these structs by value, so cuLaunchKernel's argument list is a single pointer and
// the layout is the one both compilers (nvcc for the kernels, the C++ compiler for libattnrt)
// give a standard-layout struct of pointers and 64-bit integers. No CUDA header: plain C++.
#pragma once

#include <cstdint>

namespace attnrt::cp::cuda_kernels {

// Element types of a row view (not DLPack's codes: one small integer the kernels switch on).
enum ElementType : int32_t { kF32 = 0, kF16 = 1, kBF16 = 2 };

// A tensor of up to 4 dimensions seen as rows: shape[0] x shape[1] x shape[2] rows of `cols`
// contiguous elements at base + (i0 stride[0] + i1 stride[1] + i2 stride[2]) elements; fewer
// dimensions are leading 1s (block_ops.hpp's views; the same cut host_block_ops.cpp makes).
struct Rows {
  void* base = nullptr;  // data + byte_offset
  int32_t type = kF32;
  int32_t pad_ = 0;
  int64_t shape[3] = {1, 1, 1};
  int64_t stride[3] = {0, 0, 0};  // in elements
  int64_t cols = 1;
};

struct CopyArgs {  // dst = src, converted (round to nearest even)
  Rows dst, src;
};
struct FillArgs {  // dst = value
  Rows dst;
  float value = 0.0f;
};
struct AddArgs {  // acc (float32) += part
  Rows acc, part;
};
// out rows (b, l, h) of head_dim_v columns; lse rows (0, b, h) with l along the columns.
struct MergeArgs {
  Rows out_acc, out_part, lse_acc, lse_part;
};

// The kernels' names in the fatbin (extern "C"): <op>_v1 moves one element per thread step, <op>_v4
// four (16-byte float32 or 8-byte 16-bit loads) where every row start and `cols` allow it.
constexpr const char* kCopyV1 = "attnrt_cp_copy_v1";
constexpr const char* kCopyV4 = "attnrt_cp_copy_v4";
constexpr const char* kFillV1 = "attnrt_cp_fill_v1";
constexpr const char* kFillV4 = "attnrt_cp_fill_v4";
constexpr const char* kAddV1 = "attnrt_cp_add_v1";
constexpr const char* kAddV4 = "attnrt_cp_add_v4";
constexpr const char* kMergeV1 = "attnrt_cp_merge_v1";
constexpr const char* kMergeV4 = "attnrt_cp_merge_v4";

constexpr int kThreads = 256;  // per block: 8 warps

}  // namespace attnrt::cp::cuda_kernels
