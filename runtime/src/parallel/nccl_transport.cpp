// The NCCL transport (nccl_transport.hpp). Streams and events go through the CUDA driver API
// that libattnrt already opens at run time (src/cuda/cuda_driver.hpp); a CUstream is the same
// handle as the cudaStream_t NCCL and the plugins take.
#include "../cuda/cuda_driver.hpp"
#include "nccl_library.hpp"

#include <attnrt/runtime/error.hpp>

#include <fmt/format.h>

namespace attnrt::cp {

namespace {

constexpr unsigned kStreamNonBlocking = 1;   // CU_STREAM_NON_BLOCKING: no implicit sync with stream 0
constexpr unsigned kEventDisableTiming = 2;  // CU_EVENT_DISABLE_TIMING: the cheapest event

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

  void start(DLDevice d) {
    device = d;
    driver = &cuda::driver();
    driver->make_current(device);
    driver->check(driver->cuStreamCreate(&comm_stream, kStreamNonBlocking), "NCCL transport: cuStreamCreate");
  }
  // An event recorded on `stream` now.
  cuda::CUevent record(cuda::CUstream stream) const {
    cuda::CUevent e = nullptr;
    driver->check(driver->cuEventCreate(&e, kEventDisableTiming), "NCCL transport: cuEventCreate");
    driver->check(driver->cuEventRecord(e, stream), "NCCL transport: cuEventRecord");
    return e;
  }
  void check_async(const char* what) const {
    nccl::Result async = 0;
    api->check(api->CommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
    api->check(async, what);
  }
};

namespace {

class NcclPending final : public PendingExchange {
 public:
  NcclPending(const NcclTransport::Impl& impl, cuda::CUevent done, cuda::CUstream stream)
      : impl_(impl), done_(done), stream_(stream) {}
  ~NcclPending() override {
    if (done_) impl_.driver->cuEventDestroy(done_);  // released once the event completes
  }
  void wait() override {
    impl_.driver->make_current(impl_.device);
    impl_.driver->check(impl_.driver->cuStreamWaitEvent(stream_, done_, 0), "NCCL transport: cuStreamWaitEvent");
    impl_.check_async("NCCL transport: the exchange failed");
  }

 private:
  const NcclTransport::Impl& impl_;
  cuda::CUevent done_;
  cuda::CUstream stream_;
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
  m.driver->make_current(m.device);
  // The sends read what the compute stream wrote: the communication stream waits for it.
  const cuda::CUevent ready = m.record(static_cast<cuda::CUstream>(stream));
  const cuda::CUresult waited = m.driver->cuStreamWaitEvent(m.comm_stream, ready, 0);
  m.driver->cuEventDestroy(ready);
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

void NcclTransport::abort(const std::string& /*reason*/) {
  // NCCL carries no message to the other ranks: their pending operations fail, and each rank's
  // own error names its cause. A communicator the caller lent is the caller's to abort.
  if (!impl_->owns_comm || !impl_->comm) return;
  impl_->api->CommAbort(impl_->comm);  // frees it too
  impl_->comm = nullptr;
}

}  // namespace attnrt::cp
