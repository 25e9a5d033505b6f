// The CUDA BlockOps kernels (block_ops.hpp): copy with dtype conversion, fill, accumulate, and the
// LSE merge, over the row views of cuda_block_kernels.hpp. Compiled by nvcc into a fatbin that is
// embedded in libattnrt and launched through the driver API (cuda_block_ops.cpp), so libattnrt
// keeps no link dependency on CUDA. Element-wise and memory-bound: each thread moves 1 or 4
// elements per step (the _v4 kernels: 16-byte float32, 8-byte 16-bit accesses), grid-stride.
// The merge is lse_merge.hpp's code, the very lines the CPU path runs.
#include "cuda_block_kernels.hpp"

#include <attnrt/runtime/parallel/lse_merge.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace attnrt::cp::cuda_kernels {
namespace {

__device__ __forceinline__ float to_float(uint16_t bits, int32_t type) {
  return type == kF16 ? __half2float(__ushort_as_half(bits)) : __bfloat162float(__ushort_as_bfloat16(bits));
}

// Round to nearest even; NaN stays NaN, overflow becomes inf (as host_block_ops.cpp's conversions).
__device__ __forceinline__ uint16_t from_float(float f, int32_t type) {
  return type == kF16 ? __half_as_ushort(__float2half_rn(f)) : __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

__device__ __forceinline__ int64_t row_offset(const Rows& r, int64_t row) {
  const int64_t i2 = row % r.shape[2];
  const int64_t rest = row / r.shape[2];
  const int64_t i1 = rest % r.shape[1];
  const int64_t i0 = rest / r.shape[1];
  return i0 * r.stride[0] + i1 * r.stride[1] + i2 * r.stride[2];
}

template <int V>
__device__ __forceinline__ void load(const Rows& r, int64_t at, float (&x)[V]) {
  if (r.type == kF32) {
    const float* p = static_cast<const float*>(r.base) + at;
    if constexpr (V == 4) {
      const float4 v = *reinterpret_cast<const float4*>(p);
      x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    } else {
      x[0] = *p;
    }
  } else {
    const uint16_t* p = static_cast<const uint16_t*>(r.base) + at;
    if constexpr (V == 4) {
      const uint2 v = *reinterpret_cast<const uint2*>(p);
      x[0] = to_float(uint16_t(v.x & 0xffffu), r.type), x[1] = to_float(uint16_t(v.x >> 16), r.type);
      x[2] = to_float(uint16_t(v.y & 0xffffu), r.type), x[3] = to_float(uint16_t(v.y >> 16), r.type);
    } else {
      x[0] = to_float(*p, r.type);
    }
  }
}

template <int V>
__device__ __forceinline__ void store(const Rows& r, int64_t at, const float (&x)[V]) {
  if (r.type == kF32) {
    float* p = static_cast<float*>(r.base) + at;
    if constexpr (V == 4) {
      *reinterpret_cast<float4*>(p) = make_float4(x[0], x[1], x[2], x[3]);
    } else {
      *p = x[0];
    }
  } else {
    uint16_t* p = static_cast<uint16_t*>(r.base) + at;
    if constexpr (V == 4) {
      uint2 v;
      v.x = uint32_t(from_float(x[0], r.type)) | (uint32_t(from_float(x[1], r.type)) << 16);
      v.y = uint32_t(from_float(x[2], r.type)) | (uint32_t(from_float(x[3], r.type)) << 16);
      *reinterpret_cast<uint2*>(p) = v;
    } else {
      *p = from_float(x[0], r.type);
    }
  }
}

__device__ __forceinline__ int64_t num_rows(const Rows& r) { return r.shape[0] * r.shape[1] * r.shape[2]; }

// Visits every V-element group of `shape` (the rows of r) once, grid-stride: body(row, col).
template <int V, class Body>
__device__ __forceinline__ void for_groups(const Rows& r, Body body) {
  const int64_t groups_per_row = r.cols / V;
  const int64_t total = num_rows(r) * groups_per_row;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    body(i / groups_per_row, (i % groups_per_row) * V);
  }
}

template <int V>
__device__ void copy(const CopyArgs& a) {
  for_groups<V>(a.dst, [&](int64_t row, int64_t col) {
    float x[V];
    load<V>(a.src, row_offset(a.src, row) + col, x);
    store<V>(a.dst, row_offset(a.dst, row) + col, x);
  });
}

template <int V>
__device__ void fill(const FillArgs& a) {
  float x[V];
  for (int i = 0; i < V; ++i) x[i] = a.value;
  for_groups<V>(a.dst, [&](int64_t row, int64_t col) { store<V>(a.dst, row_offset(a.dst, row) + col, x); });
}

template <int V>
__device__ void add(const AddArgs& a) {
  for_groups<V>(a.acc, [&](int64_t row, int64_t col) {
    float x[V], y[V];
    const int64_t at = row_offset(a.acc, row) + col;
    load<V>(a.acc, at, x);
    load<V>(a.part, row_offset(a.part, row) + col, y);
    for (int i = 0; i < V; ++i) x[i] += y[i];
    store<V>(a.acc, at, x);
  });
}

// A warp per out row (b, l, h): every lane reads the row's two LSEs and computes the weights, the
// lanes merge the columns, and lane 0 writes the merged LSE once all have read the old one. Rows
// map one to one onto LSE elements, so no two warps touch the same LSE.
template <int V>
__device__ void merge(const MergeArgs& a) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  const int64_t rows = num_rows(a.out_acc);
  const int64_t seq = a.out_acc.shape[1], heads = a.out_acc.shape[2];
  for (int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; row < rows; row += warps) {
    const int64_t h = row % heads, l = row / heads % seq, b = row / heads / seq;
    float* lse_acc = static_cast<float*>(a.lse_acc.base) + b * a.lse_acc.stride[1] + h * a.lse_acc.stride[2] + l;
    const float lse_part =
        static_cast<const float*>(a.lse_part.base)[b * a.lse_part.stride[1] + h * a.lse_part.stride[2] + l];
    const LseMergeWeights w = lse_merge_weights(*lse_acc, lse_part);
    const int64_t at_acc = row_offset(a.out_acc, row), at_part = row_offset(a.out_part, row);
    for (int64_t c = int64_t(lane) * V; c < a.out_acc.cols; c += 32 * V) {
      float x[V], y[V];
      load<V>(a.out_acc, at_acc + c, x);
      load<V>(a.out_part, at_part + c, y);
      for (int i = 0; i < V; ++i) x[i] = lse_merge_element(w, x[i], y[i]);
      store<V>(a.out_acc, at_acc + c, x);
    }
    __syncwarp();
    if (lane == 0) *lse_acc = w.lse;
  }
}

}  // namespace
}  // namespace attnrt::cp::cuda_kernels

using namespace attnrt::cp::cuda_kernels;

// Unmangled names: the host looks them up with cuModuleGetFunction (cuda_block_kernels.hpp).
extern "C" __global__ void __launch_bounds__(kThreads) attnrt_cp_copy_v1(CopyArgs a) { copy<1>(a); }
extern "C" __global__ void __launch_bounds__(kThreads) attnrt_cp_copy_v4(CopyArgs a) { copy<4>(a); }
extern "C" __global__ void __launch_bounds__(kThreads) attnrt_cp_fill_v1(FillArgs a) { fill<1>(a); }
extern "C" __global__ void __launch_bounds__(kThreads) attnrt_cp_fill_v4(FillArgs a) { fill<4>(a); }
extern "C" __global__ void __launch_bounds__(kThreads) attnrt_cp_add_v1(AddArgs a) { add<1>(a); }
extern "C" __global__ void __launch_bounds__(kThreads) attnrt_cp_add_v4(AddArgs a) { add<4>(a); }
extern "C" __global__ void __launch_bounds__(kThreads) attnrt_cp_merge_v1(MergeArgs a) { merge<1>(a); }
extern "C" __global__ void __launch_bounds__(kThreads) attnrt_cp_merge_v4(MergeArgs a) { merge<4>(a); }
