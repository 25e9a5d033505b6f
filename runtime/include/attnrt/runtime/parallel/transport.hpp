// The transport of context-parallel attention: point-to-point messages between the ranks of one
// group, posted in batches and completed asynchronously. The ring needs nothing else: each step
// sends the K/V block it holds to the next rank and receives the next block from the previous one
// (the backward sends the dK/dV accumulators along too, and returns them to their owner at the
// end).
//
// Two implementations: InProcessGroup (in_process_transport.hpp; N ranks as N threads of one
// process, the CPU tests' double) and NCCL (nccl_transport.hpp; libnccl opened at run time,
// ncclSend/ncclRecv on a communication stream: docs/distributed.md). Both match messages between
// two ranks in the order they were posted, as NCCL does, so the ring code cannot tell them apart.
#pragma once

#include <attnrt/runtime/export.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace attnrt::cp {

// One message of an exchange: `bytes` at `data` (memory on the ring's device) sent to, or
// received from, rank `peer`.
struct Transfer {
  int peer = 0;
  void* data = nullptr;
  size_t bytes = 0;
};

// An exchange in flight. Destroying it without wait() leaves the transfers running: call
// Transport::abort first when giving up (the ring does).
class ATTNRT_API PendingExchange {
 public:
  virtual ~PendingExchange();
  // CPU: returns when every receive's data is in place and every send's buffer may be reused.
  // CUDA: orders the exchange's stream after the transfers and returns without blocking.
  // Throws attnrt::Error (ATTNRT_ERROR_DEVICE) when the transfer failed or the group was aborted.
  virtual void wait() = 0;
};

class ATTNRT_API Transport {
 public:
  virtual ~Transport();
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string name() const = 0;  // "in-process", "nccl"

  // Posts `sends` and `receives` as one group and returns at once (NCCL's ncclGroupStart/End:
  // a ring in which every rank sends to its next and receives from its previous cannot
  // deadlock). Messages from one rank to another match in the order posted; a receive's bytes
  // must equal the matching send's (else wait() throws, naming both). Send buffers must stay
  // unchanged and receive buffers unread until wait() returns. `stream` (CUDA: cudaStream_t; CPU:
  // NULL) is the compute stream: the sends start after the work queued on it so far, and wait()
  // makes it wait for the transfers.
  virtual std::unique_ptr<PendingExchange> exchange(std::span<const Transfer> sends, std::span<const Transfer> receives,
                                                    void* stream) = 0;

  // Stops every pending and future wait of every rank of the group with an error carrying
  // `reason`: a rank that fails mid-ring calls it so the others do not wait forever.
  virtual void abort(const std::string& reason) = 0;

  // Blocks the host until the work queued on `stream` so far (a ring's transfers and everything
  // ordered after them) has finished, and throws attnrt::Error (ATTNRT_ERROR_DEVICE) if a
  // transfer failed or made no progress: on CUDA, exchange() and wait() return at once, so a
  // peer that failed before posting its side (a malformed shard) shows only here. The NCCL
  // transport gives up after its timeout, aborts the communicator it created (its kernels then
  // end) and says so. CPU transports (everything is done on return): nothing to do.
  virtual void synchronize(void* stream);
};

inline int ring_next(int rank, int world_size) { return (rank + 1) % world_size; }
inline int ring_prev(int rank, int world_size) { return (rank + world_size - 1) % world_size; }

}  // namespace attnrt::cp
