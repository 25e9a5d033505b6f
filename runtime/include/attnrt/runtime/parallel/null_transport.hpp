// A transport that moves nothing and completes at once: every exchange "arrives" with whatever
// the receive buffer already held. For timing only: a ring on it makes the same plugin calls on
// the same shapes as over NCCL, so its time is the ring's compute alone, and the difference to
// the real ring is what communication adds (attnrt bench --context-parallel, the two-GPU test).
// Its results are wrong by construction: never use it where they are read.
#pragma once

#include <attnrt/runtime/parallel/transport.hpp>

#include <memory>
#include <span>
#include <string>

namespace attnrt::cp {

class NullTransport final : public Transport {
 public:
  NullTransport(int rank, int world_size) : rank_(rank), world_size_(world_size) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  std::string name() const override { return "none"; }
  std::unique_ptr<PendingExchange> exchange(std::span<const Transfer>, std::span<const Transfer>, void*) override {
    struct Done final : PendingExchange {
      void wait() override {}
    };
    return std::make_unique<Done>();
  }
  void abort(const std::string&) override {}

 private:
  int rank_, world_size_;
};

}  // namespace attnrt::cp
