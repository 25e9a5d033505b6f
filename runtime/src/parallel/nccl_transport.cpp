// The NCCL transport (nccl_transport.hpp). Streams and events go through the CUDA driver API
// that libattnrt already opens at run time (src/cuda/cuda_driver.hpp); a CUstream is the same
// handle as the cudaStream_t NCCL and the plugins take.
#include "../cuda/cuda_driver.hpp"
#include "nccl_library.hpp"

#include <attnrt/runtime/error.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace attnrt::cp {

namespace {

constexpr unsigned kStreamNonBlocking = 1;   // CU_STREAM_NON_BLOCKING: no implicit sync with stream 0
constexpr unsigned kEventDisableTiming = 2;  // CU_EVENT_DISABLE_TIMING: the cheapest event
constexpr cuda::CUresult kNotReady = 600;    // CUDA_ERROR_NOT_READY (cuEventQuery)

double default_timeout_s() {
  if (const char* env = std::getenv("ATTNRT_NCCL_TIMEOUT_S"); env && *env) {
    char* end = nullptr;
    const double s = std::strtod(env, &end);
    if (end != env && s > 0) return s;
  }
  return 600.0;
}

void check_device(DLDevice device) {
  if (device.device_type != kDLCUDA) {
    throw Error(fmt::format("NCCL transport: device must be CUDA (kDLCUDA), got device_type {}",
                            static_cast<int>(device.device_type)));
  }
}

}  // namespace

struct NcclTransport::Impl {
  const nccl::Api* api = nullptr;
  const cuda::Driver* driver = nullptr;
  nccl::Comm comm = nullptr;
  bool owns_comm = false;
  int rank = 0, world_size = 1;
  DLDevice device{};
  cuda::CUstream comm_stream = nullptr;
  double timeout_s = default_timeout_s();
  std::string aborted;  // why the communicator was aborted ("" while it is usable)
  // Events of finished exchanges, reused: a ring posts one or two exchanges per step, and an
  // event may be recorded again once the waits that use it have been enqueued.
  std::mutex events_mutex;
  std::vector<cuda::CUevent> free_events;

  void start(DLDevice d) {
    device = d;
    driver = &cuda::driver();
    driver->make_current(device);
    // The highest priority the context offers: when the previous step's attention ends, the
    // blocks of NCCL's kernel are scheduled before those of the next attention kernel, which
    // would otherwise fill every SM and delay the transfer it is meant to hide (the overlap).
    int least = 0, greatest = 0;
    driver->check(driver->cuCtxGetStreamPriorityRange(&least, &greatest),
                  "NCCL transport: cuCtxGetStreamPriorityRange");
    driver->check(driver->cuStreamCreateWithPriority(&comm_stream, kStreamNonBlocking, greatest),
                  "NCCL transport: cuStreamCreateWithPriority");
  }
  ~Impl() {
    if (!driver) return;
    for (cuda::CUevent e : free_events) driver->cuEventDestroy(e);
  }
  // An event recorded on `stream` now.
  cuda::CUevent record(cuda::CUstream stream) {
    cuda::CUevent e = nullptr;
    {
      std::lock_guard lock(events_mutex);
      if (!free_events.empty()) {
        e = free_events.back();
        free_events.pop_back();
      }
    }
    if (!e) driver->check(driver->cuEventCreate(&e, kEventDisableTiming), "NCCL transport: cuEventCreate");
    if (const cuda::CUresult r = driver->cuEventRecord(e, stream); r != 0) {
      driver->cuEventDestroy(e);
      driver->check(r, "NCCL transport: cuEventRecord");
    }
    return e;
  }
  void release(cuda::CUevent e) {
    std::lock_guard lock(events_mutex);
    free_events.push_back(e);
  }
  void check_usable() const {
    if (!aborted.empty()) throw Error(ATTNRT_ERROR_DEVICE, "NCCL transport: the communicator was aborted: " + aborted);
  }
  void check_async(const char* what) const {
    check_usable();
    nccl::Result async = 0;
    api->check(api->CommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
    api->check(async, what);
  }
  // ncclCommAbort on a communicator of ours; remembers why (later calls throw it).
  void abort(const std::string& reason) {
    if (aborted.empty()) aborted = reason.empty() ? "(no reason given)" : reason;
    if (!owns_comm || !comm) return;
    api->CommAbort(comm);  // frees it too
    comm = nullptr;
  }
};

namespace {

class NcclPending final : public PendingExchange {
 public:
  NcclPending(NcclTransport::Impl& impl, cuda::CUevent done, cuda::CUstream stream)
      : impl_(impl), done_(done), stream_(stream) {}
  ~NcclPending() override {
    // Waited: the event goes back to the pool (the wait enqueued has captured it). Not waited
    // (a ring giving up): destroyed, which the driver defers until it completes.
    if (!done_) return;
    if (waited_) {
      impl_.release(done_);
    } else {
      impl_.driver->cuEventDestroy(done_);
    }
  }
  void wait() override {
    impl_.driver->make_current(impl_.device);
    impl_.driver->check(impl_.driver->cuStreamWaitEvent(stream_, done_, 0), "NCCL transport: cuStreamWaitEvent");
    waited_ = true;
    impl_.check_async("NCCL transport: the exchange failed");
  }

 private:
  NcclTransport::Impl& impl_;
  cuda::CUevent done_;
  cuda::CUstream stream_;
  bool waited_ = false;
};

}  // namespace

NcclTransport::NcclTransport(const NcclUniqueId& id, int rank, int world_size, DLDevice device,
                             const std::string& library)
    : impl_(std::make_unique<Impl>()) {
  check_device(device);
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw Error(fmt::format("NCCL transport: rank {} is outside [0, {})", rank, world_size));
  }
  impl_->api = &nccl::api(library);
  impl_->start(device);
  impl_->api->check(impl_->api->CommInitRank(&impl_->comm, world_size, id, rank), "ncclCommInitRank");
  impl_->owns_comm = true;
  impl_->rank = rank;
  impl_->world_size = world_size;
}

NcclTransport::NcclTransport(void* comm, DLDevice device, const std::string& library)
    : impl_(std::make_unique<Impl>()) {
  check_device(device);
  if (!comm) throw Error("NCCL transport: the communicator is NULL");
  impl_->api = &nccl::api(library);
  impl_->start(device);
  impl_->comm = comm;
  impl_->api->check(impl_->api->CommUserRank(comm, &impl_->rank), "ncclCommUserRank");
  impl_->api->check(impl_->api->CommCount(comm, &impl_->world_size), "ncclCommCount");
}

NcclTransport::~NcclTransport() {
  if (!impl_) return;
  if (impl_->owns_comm && impl_->comm) impl_->api->CommDestroy(impl_->comm);
  // (Pending exchanges must not outlive the transport: nccl_transport.hpp.)
  if (impl_->comm_stream) impl_->driver->cuStreamDestroy(impl_->comm_stream);
}

int NcclTransport::rank() const { return impl_->rank; }
int NcclTransport::world_size() const { return impl_->world_size; }

std::unique_ptr<PendingExchange> NcclTransport::exchange(std::span<const Transfer> sends,
                                                         std::span<const Transfer> receives, void* stream) {
  Impl& m = *impl_;
  for (const auto* list : {&sends, &receives}) {
    for (const Transfer& t : *list) {
      if (t.peer < 0 || t.peer >= m.world_size) {
        throw Error(fmt::format("NCCL transport: peer {} is outside [0, {})", t.peer, m.world_size));
      }
    }
  }
  m.check_usable();
  m.driver->make_current(m.device);
  // The sends read what the compute stream wrote, and the receives overwrite buffers the compute
  // stream may still read (the K/V block of the step before): the communication stream waits for
  // everything queued on the compute stream so far.
  const cuda::CUevent ready = m.record(static_cast<cuda::CUstream>(stream));
  const cuda::CUresult waited = m.driver->cuStreamWaitEvent(m.comm_stream, ready, 0);
  m.release(ready);  // the wait has captured it
  m.driver->check(waited, "NCCL transport: cuStreamWaitEvent");
  // One group: a ring where every rank sends to its next and receives from its previous rank
  // would deadlock as separate blocking calls (NCCL's point-to-point documentation).
  m.api->check(m.api->GroupStart(), "ncclGroupStart");
  try {
    for (const Transfer& t : sends)
      m.api->check(m.api->Send(t.data, t.bytes, nccl::kInt8, t.peer, m.comm, m.comm_stream), "ncclSend");
    for (const Transfer& t : receives)
      m.api->check(m.api->Recv(t.data, t.bytes, nccl::kInt8, t.peer, m.comm, m.comm_stream), "ncclRecv");
  } catch (...) {
    m.api->GroupEnd();
    throw;
  }
  m.api->check(m.api->GroupEnd(), "ncclGroupEnd");
  return std::make_unique<NcclPending>(m, m.record(m.comm_stream), static_cast<cuda::CUstream>(stream));
}

void NcclTransport::abort(const std::string& reason) {
  // NCCL carries no message to the other ranks: their transfers with this rank never complete,
  // and their synchronize() times out (or sees NCCL's asynchronous error) and names the cause it
  // can see. A communicator the caller lent is the caller's to abort.
  impl_->abort(reason);
}

double NcclTransport::timeout_s() const { return impl_->timeout_s; }
void NcclTransport::set_timeout_s(double seconds) { impl_->timeout_s = seconds > 0 ? seconds : default_timeout_s(); }

void NcclTransport::synchronize(void* stream) {
  Impl& m = *impl_;
  m.check_usable();
  m.driver->make_current(m.device);
  const cuda::CUevent done = m.record(static_cast<cuda::CUstream>(stream));
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    const cuda::CUresult r = m.driver->cuEventQuery(done);
    if (r == 0) break;
    if (r != kNotReady) {
      m.release(done);
      m.driver->check(r, "NCCL transport: synchronize (cuEventQuery)");
    }
    nccl::Result async = 0;
    m.api->check(m.api->CommGetAsyncError(m.comm, &async), "ncclCommGetAsyncError");
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string why;
    if (async != 0) {
      const char* text = m.api->GetErrorString ? m.api->GetErrorString(async) : nullptr;
      why = fmt::format("NCCL reported error {} ({}) while the ring's transfers ran", async, text ? text : "unknown");
    } else if (waited > m.timeout_s) {
      why = fmt::format(
          "the ring's transfers made no progress for {:.0f} s (ATTNRT_NCCL_TIMEOUT_S): a peer rank failed before "
          "posting its side (its own error names the cause) or stopped",
          waited);
    }
    if (!why.empty()) {
      // Aborting ends our NCCL kernels, so the streams drain; the event may then complete.
      m.abort(why);
      throw Error(ATTNRT_ERROR_DEVICE, fmt::format("NCCL transport (rank {} of {}): {}", m.rank, m.world_size, why));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
  m.release(done);
  m.check_async("NCCL transport: the exchange failed");
}

}  // namespace attnrt::cp
