// Warpgroup MMA (wgmma, sm_90a) on shared-memory tiles in TMA's 128-byte swizzle. A tile of R
// rows x C columns (C a multiple of 64 16-bit elements) is stored as C / 64 column chunks of
// R rows x 128 bytes, each row's eight 16-byte units XOR-permuted by (row % 8): exactly what a
// TMA load with CU_TENSOR_MAP_SWIZZLE_128B and a 64-column box writes (tma.hpp), and one of the
// canonical layouts a wgmma matrix descriptor names (PTX ISA, "Matrix Descriptor Format";
// CUTLASS's make_gmma_desc states the same canonical forms). The tile's base must be 1024-byte
// aligned (the swizzle pattern repeats every 8 rows of 128 bytes; base_offset stays 0).
//
// The instructions themselves are CUTLASS's wrappers (cute/arch/mma_sm90_gmma.hpp), picked by
// cute's op selectors; what is ours is which descriptor each k-step reads.
#pragma once

#include <cute/arch/mma_sm90.hpp>
#include <cute/arch/mma_sm90_gmma.hpp>
#include <cute/numeric/integral_constant.hpp>
#include <cute/numeric/numeric_types.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <utility>

namespace attnrt::cuda::hopper {

// Elements per swizzle chunk (128 bytes of a 16-bit type) and bytes per 8-row swizzle atom.
constexpr int kChunkCols = 64;
constexpr uint32_t kAtomBytes = 1024;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Descriptor bits: start address [0,14), leading byte offset [16,30), stride byte offset
// [32,46) (all in 16-byte units), layout type [62,64) with 1 = 128-byte swizzle.
__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  return uint64_t((addr >> 4) & 0x3FFF) | uint64_t((lbo_bytes >> 4) & 0x3FFF) << 16 |
         uint64_t((sbo_bytes >> 4) & 0x3FFF) << 32 | uint64_t(1) << 62;
}

// K-major operand (the reduction dimension contiguous: Q and K of S = Q K^T, rows of d). k-step
// `ks` (16 columns) of a tile with `rows` rows, starting at row `row0` (a multiple of 8): the 16
// columns lie in chunk ks / 4 at byte 32 * (ks % 4) of each row; 8-row groups are 1024 bytes
// apart (SBO); LBO is unused by swizzled K-major layouts.
template <int kRows>
__device__ __forceinline__ uint64_t k_major_desc(const void* tile, int row0, int ks) {
  const uint32_t base = smem_addr(tile) + uint32_t(ks / 4) * kRows * 128 + uint32_t(row0) * 128 + (ks % 4) * 32;
  return make_desc(base, 16, kAtomBytes);
}

// MN-major operand (the output dimension contiguous: V of O = P V, keys x d, read transposed; in
// the backward dO, Q and K the same way, and dS^T as the A operand of dQ = dS K).
// k-step `ks` covers keys 16 ks .. +16, i.e. rows 16 ks of each chunk; 8-key groups are 1024
// bytes apart (SBO), and the next 64 columns of d are the next chunk, kRows * 128 bytes on (LBO).
template <int kRows>
__device__ __forceinline__ uint64_t mn_major_desc(const void* tile, int ks) {
  return make_desc(smem_addr(tile) + uint32_t(ks) * 16 * 128, kRows * 128, kAtomBytes);
}

template <class T>
struct CuteType;
template <>
struct CuteType<__nv_bfloat16> {
  using type = cute::bfloat16_t;
};
template <>
struct CuteType<__half> {
  using type = cute::half_t;
};

// One warpgroup's m64 x N x k16 products with fp32 accumulators `acc` (N / 2 floats per thread,
// in the C-fragment order of mma.sync's m16n8 tiles: warp w holds rows 16 w .. +16).
template <class T, int N>
struct Gemm {
  using E = typename CuteType<T>::type;
  using Shape = cute::Shape<cute::Int<64>, cute::Int<N>, cute::Int<16>>;
  using SS = decltype(cute::SM90::GMMA::ss_op_selector<E, E, float, Shape, cute::SM90::GMMA::Major::K,
                                                       cute::SM90::GMMA::Major::K>());
  using RS = decltype(cute::SM90::GMMA::rs_op_selector<E, E, float, Shape, cute::SM90::GMMA::Major::K,
                                                       cute::SM90::GMMA::Major::MN>());
  using SSMN = decltype(cute::SM90::GMMA::ss_op_selector<E, E, float, Shape, cute::SM90::GMMA::Major::MN,
                                                         cute::SM90::GMMA::Major::MN>());
  static constexpr int kAcc = N / 2;

  // acc (=|+=) A B^T with A and B both K-major in shared memory.
  __device__ __forceinline__ static void ss(uint64_t a, uint64_t b, float (&acc)[kAcc], bool accumulate) {
    ss_impl<SS>(a, b, acc, accumulate, std::make_index_sequence<kAcc>{});
  }
  // acc (=|+=) A B with A and B both MN-major in shared memory (A's rows and B's columns
  // contiguous: the backward's dQ = dS K, with dS^T and K stored key-major).
  __device__ __forceinline__ static void ss_mn(uint64_t a, uint64_t b, float (&acc)[kAcc], bool accumulate) {
    ss_impl<SSMN>(a, b, acc, accumulate, std::make_index_sequence<kAcc>{});
  }
  // acc += A B with A in registers (four 32-bit pairs: the C fragments of a k16 slice of an
  // earlier product, accum_to_a's order) and B MN-major in shared memory.
  __device__ __forceinline__ static void rs(const uint32_t (&a)[4], uint64_t b, float (&acc)[kAcc]) {
    rs_impl(a, b, acc, std::make_index_sequence<kAcc>{});
  }

 private:
  template <class Op, size_t... I>
  __device__ __forceinline__ static void ss_impl(uint64_t a, uint64_t b, float (&acc)[kAcc], bool accumulate,
                                                 std::index_sequence<I...>) {
    Op::fma(a, b, acc[I]..., accumulate ? cute::SM90::GMMA::ScaleOut::One : cute::SM90::GMMA::ScaleOut::Zero);
  }
  template <size_t... I>
  __device__ __forceinline__ static void rs_impl(const uint32_t (&a)[4], uint64_t b, float (&acc)[kAcc],
                                                 std::index_sequence<I...>) {
    RS::fma(a[0], a[1], a[2], a[3], b, acc[I]..., cute::SM90::GMMA::ScaleOut::One);
  }
};

// Keeps the compiler from moving reads or writes of accumulators across an asynchronous wgmma.
template <int N>
__device__ __forceinline__ void fence_operands(float (&acc)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) cute::warpgroup_fence_operand(acc[i]);
}

// The same for register A operands (P): kept live, unmoved, until the product reading them is
// known complete.
template <int N>
__device__ __forceinline__ void fence_operands(uint32_t (&a)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) cute::warpgroup_fence_operand(a[i][j]);
  }
}

}  // namespace attnrt::cuda::hopper
