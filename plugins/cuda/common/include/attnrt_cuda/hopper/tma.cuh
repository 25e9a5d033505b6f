// TMA (cp.async.bulk.tensor, sm_90) loads of one 4-D box, completed on an mbarrier, and the
// mbarrier and register-reallocation primitives a warp-specialized kernel needs (CUTLASS's
// cutlass/arch/barrier.h and reg_reconfig.h, re-exported under the names the kernels use).
#pragma once

#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>

#include <cuda.h>

#include <cstdint>

namespace attnrt::cuda::hopper {

using Barrier = cutlass::arch::ClusterBarrier;
using TxBarrier = cutlass::arch::ClusterTransactionBarrier;

// Box at (c0 .. c3) of `map` into smem `dst`; its bytes count towards `bar`'s transaction.
__device__ __forceinline__ void tma_load_4d(const CUtensorMap* map, uint64_t* bar, void* dst, int c0, int c1, int c2,
                                            int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(dst))),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
      "r"(static_cast<uint32_t>(__cvta_generic_to_shared(bar)))
      : "memory");
}

// TMA store of one 4-D box from shared memory (cp.async.bulk.tensor, sm_90), tracked by the
// issuing thread's bulk groups (bulk_commit, bulk_wait_read below). Elements outside the tensor
// (rows past its last token, columns past its head_dim) are not written. The writes of `src`
// must be made visible to the async proxy first (fence.proxy.async.shared::cta).
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, const void* src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(static_cast<uint32_t>(__cvta_generic_to_shared(src))), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

// The kernel's shared storage at the first 1024-byte boundary of the dynamic shared memory `raw`
// (TMA's 128-byte swizzle wants its tiles 1024-byte aligned; launches add 1 KB for it). Formed as
// an offset from `raw`, so that the compiler still knows the storage lives in shared memory: the
// round trip through an integer (uintptr_t) that aligned it before left every thread's access to
// it a generic LD.E/ST.E, resolved through the L1TEX pipe (flash_attention_3's backward stalled on
// its reads of the rows' lse and D, bench/results/fa3-bwd-fixed-2026-11-26/call2).
template <class Storage>
__device__ __forceinline__ Storage& aligned_shared(unsigned char* raw) {
  const uint32_t misalign = static_cast<uint32_t>(__cvta_generic_to_shared(raw)) & 1023u;
  return *reinterpret_cast<Storage*>(raw + ((1024u - misalign) & 1023u));
}

__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Adds `bytes` (a multiple of 16) of fp32 at smem `src` to global `dst` (16-byte aligned)
// element by element in L2 (cp.reduce.async.bulk, sm_90): one instruction for a whole tile of
// partial sums, where per-thread atomics cost one L2 transaction per 32-byte sector per warp.
// Completion is tracked per bulk group of the issuing thread: bulk_commit, then bulk_wait_read
// before `src` is overwritten and bulk_wait before the kernel's results are read.
__device__ __forceinline__ void bulk_reduce_add_f32(float* dst, const float* src, uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(dst),
               "r"(static_cast<uint32_t>(__cvta_generic_to_shared(src))), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

// Waits until the issuing thread's bulk groups have read their shared-memory sources.
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }

// Waits until the issuing thread's bulk groups are complete, their global writes included.
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

// Orders this thread's async-proxy (bulk copy) global accesses with its generic-proxy ones, both
// ways: after bulk_wait, before a flag store that publishes the bulk writes; after a flag load,
// before bulk operations that must follow what the flag published.
__device__ __forceinline__ void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;" ::: "memory"); }

}  // namespace attnrt::cuda::hopper
