// The NCCL transport of context parallelism: ncclSend / ncclRecv between the ranks of one NCCL
// communicator, on a communication stream of its own that runs beside the compute stream.
//
// libnccl is opened at run time (libnccl.so.2 on the system's library path, or the file named by
// ATTNRT_NCCL_LIBRARY or by the `library` arguments below), so libattnrt keeps no link
// dependency on NCCL or CUDA and no NCCL header is needed to build it: only opaque handles,
// integers and the 128-byte ncclUniqueId cross (nccl.h's C declarations, stable since NCCL 2.7,
// the first with ncclSend/ncclRecv; older libraries are refused). Design and status:
// docs/distributed.md; tests/gpu/context_parallel_2gpu.cpp runs it on two GPUs.
#pragma once

#include <attnrt/runtime/export.hpp>
#include <attnrt/runtime/parallel/transport.hpp>

#include <dlpack/dlpack.h>

#include <memory>
#include <string>

namespace attnrt::cp {

// ncclUniqueId (NCCL_UNIQUE_ID_BYTES = 128): made by rank 0, sent by the host to every rank
// (torch.distributed's store from Python; MPI_Bcast or a file from C++).
struct NcclUniqueId {
  char bytes[128];
};

// The libnccl this process uses: where it is and its version, or why there is none.
struct NcclLibraryInfo {
  bool available = false;
  std::string path;          // the file opened, or looked for
  int version = 0;           // ncclGetVersion's code (2.28.3: 22803)
  std::string version_text;  // "2.28.3"
  std::string reason;        // why not, when !available
};

// Opens `library` (empty: ATTNRT_NCCL_LIBRARY, else libnccl.so.2) once per file name and checks
// its entry points and version. Never throws.
ATTNRT_API NcclLibraryInfo nccl_library_info(const std::string& library = "");

// ncclGetUniqueId, on the rank that makes the id. Throws attnrt::Error: ATTNRT_ERROR_UNSUPPORTED
// when libnccl cannot be used (the reason names the file), ATTNRT_ERROR_DEVICE for NCCL's errors.
ATTNRT_API NcclUniqueId nccl_unique_id(const std::string& library = "");

class ATTNRT_API NcclTransport final : public Transport {
 public:
  // A new communicator of `world_size` ranks on CUDA device `device` (ncclCommInitRank: every
  // rank calls it with the same id, at the same time). Throws attnrt::Error:
  // ATTNRT_ERROR_INVALID_ARGUMENT for a device that is not CUDA or a rank outside [0, world_size),
  // ATTNRT_ERROR_UNSUPPORTED when libnccl cannot be used, ATTNRT_ERROR_DEVICE for CUDA's and
  // NCCL's errors (with their text).
  NcclTransport(const NcclUniqueId& id, int rank, int world_size, DLDevice device, const std::string& library = "");
  // Uses `comm`, an ncclComm_t the caller created on `device` (for example the communicator of
  // the framework's process group), without taking it: the caller destroys it after this.
  NcclTransport(void* comm, DLDevice device, const std::string& library = "");
  ~NcclTransport() override;
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  int rank() const override;
  int world_size() const override;
  std::string name() const override { return "nccl"; }

  // Orders the communication stream after the work on `stream` (the compute stream, a
  // cudaStream_t), issues the group's ncclSend / ncclRecv there (ncclInt8 counts: bytes), and
  // returns; wait() makes `stream` wait for them (the host does not block) and reports an
  // asynchronous NCCL error if the communicator has one.
  std::unique_ptr<PendingExchange> exchange(std::span<const Transfer> sends, std::span<const Transfer> receives,
                                            void* stream) override;
  // ncclCommAbort on a communicator this transport created: every rank's pending NCCL work ends
  // with an error instead of hanging. A lent communicator is left to its owner (the framework's
  // own failure handling, e.g. its NCCL watchdog). Pending exchanges must not outlive the transport.
  void abort(const std::string& reason) override;

  // Polls an event recorded on `stream` (and ncclCommGetAsyncError) until it completes; after
  // timeout() without completion, or on an asynchronous NCCL error, aborts a communicator this
  // transport created (its pending kernels end, so the stream drains) and throws
  // ATTNRT_ERROR_DEVICE naming the cause. A lent communicator is not aborted: the error is thrown
  // and the stream may stay blocked until its owner aborts it.
  void synchronize(void* stream) override;
  // How long synchronize() waits for progress: ATTNRT_NCCL_TIMEOUT_S (seconds) if set, else 600.
  double timeout_s() const;
  void set_timeout_s(double seconds);

  struct Impl;  // nccl_transport.cpp

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnrt::cp
