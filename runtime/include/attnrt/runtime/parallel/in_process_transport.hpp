// The in-process transport: N ranks as N threads of one process, exchanging through memory.
// The CPU tests' double for NCCL. It keeps NCCL's rules, so a ring that breaks them fails here
// too: a message is copied when its receiver waits, straight from the sender's buffer (a sender
// that touches its buffer before its own wait() corrupts what arrives), the sender's wait()
// returns only once the receiver has copied, and messages between two ranks match in the order
// they were posted, with equal sizes.
#pragma once

#include <attnrt/runtime/export.hpp>
#include <attnrt/runtime/parallel/transport.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

namespace attnrt::cp {

class ATTNRT_API InProcessGroup {
 public:
  // `timeout`: how long a wait may block before it throws (a rank that stopped, or schedules
  // that differ between ranks, would otherwise hang the test).
  explicit InProcessGroup(int world_size, std::chrono::milliseconds timeout = std::chrono::seconds(60));
  ~InProcessGroup();
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;

  int world_size() const { return static_cast<int>(transports_.size()); }
  // Rank `rank`'s end; each rank's thread uses its own. Throws attnrt::Error for a bad rank.
  Transport& transport(int rank);

  // What went through the group: for tests of what the ring sends.
  size_t bytes_sent() const;
  size_t messages_sent() const;

  struct State;  // shared by the group's transports (in_process_transport.cpp)

 private:
  std::shared_ptr<State> state_;
  std::vector<std::unique_ptr<Transport>> transports_;
};

}  // namespace attnrt::cp
