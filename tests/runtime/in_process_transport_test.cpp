// The in-process transport (runtime/include/attnrt/runtime/parallel/in_process_transport.hpp):
// ring exchanges deliver the right bytes in order, a size mismatch and an abort are errors that
// name what happened, and a wait with no partner times out instead of hanging.
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/parallel/in_process_transport.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace attnrt {
namespace {

using namespace std::chrono_literals;

// Four ranks pass their buffers around the ring three times; every rank ends up having seen
// every other rank's data, in ring order, and two messages to one peer keep their order.
TEST(InProcessTransport, RingDeliversInOrder) {
  const int n = 4;
  cp::InProcessGroup group(n, 10s);
  std::vector<std::vector<int>> seen(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        cp::Transport& t = group.transport(r);
        std::vector<int> cur(64, r), next(64, -1), second(8, -1), second_in(8, -1);
        for (int step = 0; step + 1 < n; ++step) {
          std::vector<int> extra(8, 100 * r + step);
          const cp::Transfer sends[] = {{cp::ring_next(r, n), cur.data(), cur.size() * sizeof(int)},
                                        {cp::ring_next(r, n), extra.data(), extra.size() * sizeof(int)}};
          const cp::Transfer receives[] = {{cp::ring_prev(r, n), next.data(), next.size() * sizeof(int)},
                                           {cp::ring_prev(r, n), second_in.data(), second_in.size() * sizeof(int)}};
          t.exchange(sends, receives, nullptr)->wait();
          seen[r].push_back(next[0]);
          EXPECT_EQ(next, std::vector<int>(64, next[0]));
          EXPECT_EQ(second_in, std::vector<int>(8, 100 * cp::ring_prev(r, n) + step));
          std::swap(cur, next);
        }
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(errors[r], "") << r;
    EXPECT_EQ(seen[r], (std::vector<int>{(r + 3) % 4, (r + 2) % 4, (r + 1) % 4})) << r;
  }
  EXPECT_EQ(group.messages_sent(), static_cast<size_t>(n * 3 * 2));
  EXPECT_EQ(group.bytes_sent(), static_cast<size_t>(n * 3 * (64 + 8) * sizeof(int)));
}

// NCCL's rule that a send buffer stays untouched until the send completes is kept: the message is
// read from the sender's buffer when the receiver waits, so a sender that overwrites it early
// corrupts what arrives (as it would on the GPU), and the ring's tests would see it.
TEST(InProcessTransport, SendBufferIsReadWhenReceived) {
  cp::InProcessGroup group(2, 10s);
  std::vector<int> sent(4, 1), received(4, 0);
  const cp::Transfer s{1, sent.data(), sent.size() * sizeof(int)}, r{0, received.data(), received.size() * sizeof(int)};
  auto pending_send = group.transport(0).exchange({&s, 1}, {}, nullptr);
  auto pending_receive = group.transport(1).exchange({}, {&r, 1}, nullptr);
  sent.assign(4, 2);  // too early: the send has not completed
  std::thread sender([&] { pending_send->wait(); });
  pending_receive->wait();
  sender.join();
  EXPECT_EQ(received, std::vector<int>(4, 2));
}

TEST(InProcessTransport, SizeMismatchNamesBothSizes) {
  cp::InProcessGroup group(2, 10s);
  std::vector<char> a(16), b(32);
  std::string err0, err1;
  std::thread t0([&] {
    try {
      const cp::Transfer s{1, a.data(), a.size()};
      group.transport(0).exchange({&s, 1}, {}, nullptr)->wait();
    } catch (const Error& e) {
      err0 = e.what();
    }
  });
  std::thread t1([&] {
    try {
      const cp::Transfer r{0, b.data(), b.size()};
      group.transport(1).exchange({}, {&r, 1}, nullptr)->wait();
    } catch (const Error& e) {
      err1 = e.what();
    }
  });
  t0.join();
  t1.join();
  EXPECT_NE(err1.find("message 0 from rank 0 to rank 1: sent 16 bytes, the receive expects 32"), std::string::npos)
      << err1;
  EXPECT_NE(err0.find("aborted"), std::string::npos) << err0;  // the sender is released too
}

TEST(InProcessTransport, AbortReleasesWaitersWithTheReason) {
  cp::InProcessGroup group(3, 10s);
  std::vector<char> buf(8);
  std::string err;
  std::thread waiter([&] {
    try {
      const cp::Transfer r{2, buf.data(), buf.size()};
      group.transport(0).exchange({}, {&r, 1}, nullptr)->wait();  // rank 2 never sends
    } catch (const Error& e) {
      err = e.what();
    }
  });
  std::this_thread::sleep_for(20ms);
  group.transport(2).abort("the plugin failed");
  waiter.join();
  EXPECT_NE(err.find("rank 0: the group was aborted: rank 2: the plugin failed"), std::string::npos) << err;
  // Later exchanges fail at once.
  const cp::Transfer s{1, buf.data(), buf.size()};
  EXPECT_THROW(group.transport(1).exchange({&s, 1}, {}, nullptr), Error);
}

TEST(InProcessTransport, WaitTimesOutNamingThePeer) {
  cp::InProcessGroup group(2, 50ms);
  std::vector<char> buf(8);
  const cp::Transfer r{1, buf.data(), buf.size()};
  try {
    group.transport(0).exchange({}, {&r, 1}, nullptr)->wait();
    ADD_FAILURE() << "no timeout";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 waited 50 ms for message 0 from rank 1 (8 bytes)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(group.transport(2), Error);
  const cp::Transfer bad{5, buf.data(), buf.size()};
  EXPECT_THROW(group.transport(0).exchange({&bad, 1}, {}, nullptr), Error);
}

}  // namespace
}  // namespace attnrt
