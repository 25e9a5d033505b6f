// The work of a ring step other than attention itself, on one kind of device: buffers, copies
// with dtype conversion, accumulation, and the LSE merge. The ring code (context_parallel.hpp)
// calls only these and the Backend, so moving it to CUDA means one more implementation of this
// interface (element-wise kernels that include lse_merge.hpp), not another ring.
//
// Tensors are DLPack views of at most 4 dimensions with any strides whose last dimension is
// contiguous (the ABI's rule). Float dtypes: float32, float16, bfloat16 (DLPack codes). All
// calls are asynchronous on `stream` for CUDA (CPU: NULL, the call has finished on return).
#pragma once

#include <attnrt/runtime/export.hpp>

#include <dlpack/dlpack.h>

#include <cstddef>
#include <memory>
#include <string>

namespace attnrt::cp {

class ATTNRT_API BlockOps {
 public:
  virtual ~BlockOps();
  virtual DLDevice device() const = 0;

  // `bytes` of device memory, aligned to 256 bytes, freed when the last owner lets go. CUDA:
  // stream-ordered on `stream` (usable by work queued on it from now on; freed after the work
  // queued on it before the release), from a pool kept per device, so a ring in steady state
  // makes no cudaMalloc/cudaFree. Work on other streams that uses the buffer (NCCL's) must be
  // ordered before the release by events, as the NCCL transport's wait() does. CPU: `stream` unused.
  virtual std::shared_ptr<void> allocate(size_t bytes, void* stream) = 0;
  // `bytes` from host memory at `host` to `dst` (memory from allocate): what the ring computes on
  // the host and its calls read on the device (a varlen call's cu_seqlens). Ordered on `stream`
  // like the other calls; `host` may be reused once upload returns (CUDA: the driver stages
  // pageable memory before returning).
  virtual void upload(const void* host, void* dst, size_t bytes, void* stream) = 0;
  // dst = src, converted to dst's dtype (rounding to nearest even). Same shapes.
  virtual void copy(const DLTensor& src, DLTensor& dst, void* stream) = 0;
  // Every element of dst (a float tensor) = value.
  virtual void fill(DLTensor& dst, float value, void* stream) = 0;
  // acc (float32) += part (any float dtype), element by element. Same shapes.
  virtual void add(DLTensor& acc, const DLTensor& part, void* stream) = 0;
  // The LSE merge (lse_merge.hpp) of a partial result into an accumulator, row by row:
  //   out_acc [batch, rows, heads, head_dim_v] float32,  lse_acc [batch, heads, rows] float32,
  //   out_part like out_acc in any float dtype,          lse_part like lse_acc (float32).
  virtual void merge(DLTensor& out_acc, DLTensor& lse_acc, const DLTensor& out_part, const DLTensor& lse_part,
                     void* stream) = 0;
};

// The CPU implementation (kDLCPU tensors), single-threaded loops over the lse_merge.hpp math.
ATTNRT_API std::unique_ptr<BlockOps> host_block_ops();

// The CUDA implementation for `device` (kDLCUDA): element-wise kernels compiled into libattnrt
// as a fatbin (sm_80, sm_90, and PTX for newer GPUs) and launched through the CUDA driver API
// libattnrt opens at run time; the merge kernel runs lse_merge.hpp's code. Buffers come from a
// stream-ordered pool of libattnrt's own per device (not the device's default pool, which belongs
// to the framework), which keeps what it holds between calls. Throws attnrt::Error with
// ATTNRT_ERROR_UNSUPPORTED and cuda_block_ops_unavailable_reason()'s text when it cannot be used.
ATTNRT_API std::unique_ptr<BlockOps> cuda_block_ops(DLDevice device);

// "" or why the CUDA BlockOps cannot run on `device`: libattnrt built without the CUDA toolkit
// (no kernels embedded), no CUDA driver or device, or no kernel image for the GPU. Never throws.
ATTNRT_API std::string cuda_block_ops_unavailable_reason(DLDevice device);

}  // namespace attnrt::cp
