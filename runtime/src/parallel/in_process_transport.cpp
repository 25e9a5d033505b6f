// The in-process transport (in_process_transport.hpp): a mailbox per (sender, receiver) pair,
// messages numbered in the order posted on each side, so the k-th receive from a rank matches
// the k-th send to it (NCCL's ordering).
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/parallel/in_process_transport.hpp>

#include <fmt/format.h>

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

namespace attnrt::cp {

PendingExchange::~PendingExchange() = default;
Transport::~Transport() = default;
void Transport::synchronize(void* /*stream*/) {}

namespace {

struct SendRecord {
  int from = 0, to = 0;
  const void* data = nullptr;
  size_t bytes = 0;
  bool done = false;  // the receiver has copied it
};

struct Receive {
  int from = 0;
  uint64_t seq = 0;
  void* data = nullptr;
  size_t bytes = 0;
};

using Pair = std::pair<int, int>;  // (sender, receiver)

}  // namespace

struct InProcessGroup::State {
  explicit State(std::chrono::milliseconds t) : timeout(t) {}
  std::mutex mutex;
  std::condition_variable cv;
  std::chrono::milliseconds timeout;
  std::map<Pair, std::map<uint64_t, std::shared_ptr<SendRecord>>> posted;  // sends not yet received
  std::map<Pair, uint64_t> sends_posted, receives_posted;
  bool aborted = false;
  std::string reason;
  size_t bytes = 0, messages = 0;

  [[noreturn]] void fail_aborted(int rank) const {
    throw Error(ATTNRT_ERROR_DEVICE,
                fmt::format("in-process transport: rank {}: the group was aborted: {}", rank, reason));
  }
  // Waits (lock held) until `ready` or abort; throws on abort or timeout, naming `what`.
  template <class Ready>
  void wait_for(std::unique_lock<std::mutex>& lock, int rank, Ready ready, const std::string& what) {
    if (!cv.wait_for(lock, timeout, [&] { return aborted || ready(); })) {
      throw Error(ATTNRT_ERROR_DEVICE,
                  fmt::format("in-process transport: rank {} waited {} ms for {} (a rank stopped, or the ranks' "
                              "schedules differ)",
                              rank, timeout.count(), what));
    }
    if (aborted) fail_aborted(rank);
  }
};

namespace {

class InProcessPending final : public PendingExchange {
 public:
  InProcessPending(std::shared_ptr<InProcessGroup::State> state, int rank) : state_(std::move(state)), rank_(rank) {}

  void wait() override {
    auto& s = *state_;
    std::unique_lock lock(s.mutex);
    for (const Receive& r : receives_) {
      const Pair pair{r.from, rank_};
      s.wait_for(
          lock, rank_, [&] { return s.posted[pair].count(r.seq) != 0; },
          fmt::format("message {} from rank {} ({} bytes)", r.seq, r.from, r.bytes));
      std::shared_ptr<SendRecord> rec = s.posted[pair][r.seq];
      s.posted[pair].erase(r.seq);
      if (rec->bytes != r.bytes) {
        s.aborted = true;
        s.reason = fmt::format("message {} from rank {} to rank {}: sent {} bytes, the receive expects {}", r.seq,
                               r.from, rank_, rec->bytes, r.bytes);
        s.cv.notify_all();
        throw Error(ATTNRT_ERROR_INTERNAL, "in-process transport: " + s.reason);
      }
      if (r.bytes) std::memcpy(r.data, rec->data, r.bytes);
      rec->done = true;
      s.cv.notify_all();
    }
    for (const auto& rec : sends_) {
      s.wait_for(
          lock, rank_, [&] { return rec->done; },
          fmt::format("rank {} to receive its message ({} bytes)", rec->to, rec->bytes));
    }
    receives_.clear();
    sends_.clear();
  }

  std::vector<std::shared_ptr<SendRecord>> sends_;
  std::vector<Receive> receives_;

 private:
  std::shared_ptr<InProcessGroup::State> state_;
  int rank_;
};

class InProcessTransport final : public Transport {
 public:
  InProcessTransport(std::shared_ptr<InProcessGroup::State> state, int rank, int world_size)
      : state_(std::move(state)), rank_(rank), world_size_(world_size) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  std::string name() const override { return "in-process"; }

  std::unique_ptr<PendingExchange> exchange(std::span<const Transfer> sends, std::span<const Transfer> receives,
                                            void* /*stream*/) override {
    for (const auto* list : {&sends, &receives}) {
      for (const Transfer& t : *list) {
        if (t.peer < 0 || t.peer >= world_size_) {
          throw Error(fmt::format("in-process transport: peer {} is outside [0, {})", t.peer, world_size_));
        }
        if (t.bytes && !t.data)
          throw Error("in-process transport: a transfer of " + std::to_string(t.bytes) + " bytes has no buffer");
      }
    }
    auto pending = std::make_unique<InProcessPending>(state_, rank_);
    auto& s = *state_;
    std::lock_guard lock(s.mutex);
    if (s.aborted) s.fail_aborted(rank_);
    for (const Transfer& t : sends) {
      auto rec = std::make_shared<SendRecord>(SendRecord{rank_, t.peer, t.data, t.bytes, false});
      s.posted[{rank_, t.peer}][s.sends_posted[{rank_, t.peer}]++] = rec;
      s.bytes += t.bytes;
      ++s.messages;
      pending->sends_.push_back(std::move(rec));
    }
    for (const Transfer& t : receives) {
      pending->receives_.push_back({t.peer, s.receives_posted[{t.peer, rank_}]++, t.data, t.bytes});
    }
    s.cv.notify_all();
    return pending;
  }

  void abort(const std::string& reason) override {
    auto& s = *state_;
    std::lock_guard lock(s.mutex);
    if (!s.aborted) {
      s.aborted = true;
      s.reason = fmt::format("rank {}: {}", rank_, reason);
    }
    s.cv.notify_all();
  }

 private:
  std::shared_ptr<InProcessGroup::State> state_;
  int rank_, world_size_;
};

}  // namespace

InProcessGroup::InProcessGroup(int world_size, std::chrono::milliseconds timeout)
    : state_(std::make_shared<State>(timeout)) {
  if (world_size < 1) throw Error(fmt::format("in-process transport: world size must be >= 1, got {}", world_size));
  for (int r = 0; r < world_size; ++r)
    transports_.push_back(std::make_unique<InProcessTransport>(state_, r, world_size));
}

InProcessGroup::~InProcessGroup() = default;

Transport& InProcessGroup::transport(int rank) {
  if (rank < 0 || rank >= world_size()) {
    throw Error(fmt::format("in-process transport: rank {} is outside [0, {})", rank, world_size()));
  }
  return *transports_[rank];
}

size_t InProcessGroup::bytes_sent() const {
  std::lock_guard lock(state_->mutex);
  return state_->bytes;
}

size_t InProcessGroup::messages_sent() const {
  std::lock_guard lock(state_->mutex);
  return state_->messages;
}

}  // namespace attnrt::cp
