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

namespace attnrt::cp {

class ATTNRT_API BlockOps {
 public:
  virtual ~BlockOps();
  virtual DLDevice device() const = 0;

  // `bytes` of device memory, aligned to 256 bytes, freed when the last owner lets go.
  virtual std::shared_ptr<void> allocate(size_t bytes) = 0;
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

}  // namespace attnrt::cp
